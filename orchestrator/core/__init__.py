"""The pure core: history, wire mapping, validation, repair, tokens. No I/O, no clocks, no asyncio."""
