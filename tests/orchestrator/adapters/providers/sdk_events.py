"""Raw stream events as the anthropic SDK parses them off the wire, built block by block."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anthropic.types import (
    Message,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
)


@dataclass
class RawEvents:
    """A message's raw events in order: ``message_start`` first, then what the test adds."""

    events: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        message = Message.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 10, "output_tokens": 1},
            }
        )
        self.events.append(RawMessageStartEvent(type="message_start", message=message))

    def start(self, index: int, block: dict[str, Any]) -> None:
        """A ``content_block_start`` carrying ``block``."""
        self.events.append(
            RawContentBlockStartEvent.model_validate(
                {"type": "content_block_start", "index": index, "content_block": block}
            )
        )

    def delta(self, index: int, body: dict[str, Any]) -> None:
        """A ``content_block_delta`` carrying ``body``."""
        self.events.append(
            RawContentBlockDeltaEvent.model_validate(
                {"type": "content_block_delta", "index": index, "delta": body}
            )
        )

    def stop(self, index: int) -> None:
        """A ``content_block_stop``."""
        self.events.append(RawContentBlockStopEvent(type="content_block_stop", index=index))

    def end(self, stop_reason: str, usage: dict[str, Any]) -> list[Any]:
        """``message_delta`` with the stop reason and usage, then ``message_stop``; the list."""
        self.events.append(
            RawMessageDeltaEvent.model_validate(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": usage,
                }
            )
        )
        self.events.append(RawMessageStopEvent(type="message_stop"))
        return self.events
