"""The outside world: model providers, MCP servers, the sandbox, processes, the scoped file system, session files."""
