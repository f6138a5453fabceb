"""The host's memory figures: one reading of this process, and the split across its pods."""

from __future__ import annotations

from orchestrator.serving.host.memory import POD_FLOOR_BYTES, process_memory, split_shares


def test_this_process_memory_is_read_from_proc() -> None:
    memory = process_memory()
    assert memory is not None and memory.rss_bytes > 1024 * 1024
    assert memory.pss_bytes is None or 0 < memory.pss_bytes <= memory.rss_bytes


def test_shares_follow_the_weights_and_add_up_to_the_total() -> None:
    big, small = 10 * POD_FLOOR_BYTES, 2 * POD_FLOOR_BYTES
    shares = split_shares(1_200_001, {"big": big, "small": small})
    assert sum(shares.values()) == 1_200_001
    assert shares["big"] == 5 * shares["small"] + 1  # the remainder goes to the heaviest


def test_a_new_pod_counts_as_the_floor_and_no_growth_is_no_share() -> None:
    assert split_shares(300, {"empty": 0, "floor": POD_FLOOR_BYTES}) == {
        "empty": 150,
        "floor": 150,
    }
    assert split_shares(-5, {"a": 1}) == {"a": 0}  # the host shrank below its start
    assert split_shares(100, {}) == {}
