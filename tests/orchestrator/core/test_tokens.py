"""Token estimates: the incremental sum over a growing conversation."""

from __future__ import annotations

import pytest


def test_the_message_estimate_reuses_the_unchanged_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.core import tokens

    counted: list[dict[str, object]] = []
    real = tokens.estimate_message

    def counting(message: dict[str, object]) -> int:
        counted.append(message)
        return real(message)  # type: ignore[arg-type]

    monkeypatch.setattr(tokens, "estimate_message", counting)
    messages = [{"role": "user", "content": f"message {n}"} for n in range(1000)]
    total = tokens.MessageTokens()
    first = total(messages)
    assert len(counted) == 1000 and first == sum(real(m) for m in messages)  # type: ignore[arg-type]
    counted.clear()
    # The next round: the last message grew, one more arrived; the 998 before are the same.
    grown = [
        *messages[:-1],
        {"role": "user", "content": "message 999 and a result"},
        {"role": "assistant", "content": "ok"},
    ]
    assert total(grown) == sum(real(m) for m in grown)  # type: ignore[arg-type]
    assert len(counted) == 2
    counted.clear()
    # A rebuilt view (new objects, as after a prune step) is counted whole, and right.
    rebuilt = [dict(m) for m in grown]
    assert total(rebuilt) == sum(real(m) for m in rebuilt)  # type: ignore[arg-type]
    assert len(counted) == len(rebuilt)
