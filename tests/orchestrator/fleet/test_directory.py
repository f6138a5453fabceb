"""The fleet's directory without Ray: epochs taken once each, fencing the holders of older
ones, and placement that every gateway computes alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.fleet import (
    Directory,
    Epochs,
    FleetError,
    HostInfo,
    MemoryKV,
    Placement,
    choose_host,
)
from orchestrator.session import Fence, SessionFenced


def test_epochs_go_up_by_one_per_takeover_and_fence_older_holders() -> None:
    kv = MemoryKV()
    a, b = Epochs(kv), Epochs(kv)  # two hosts, one store
    assert a.current("p") == 0
    first = a.take("p", host="h1")
    assert (first, b.current("p")) == (1, 1)
    second = b.take("p", host="h2")
    assert second == 2
    # h1 learns it at its next check: one probe past what it knew.
    assert a.current("p") == 2
    with pytest.raises(SessionFenced):
        Fence("p", first, a).check(Path("s.jsonl"))
    Fence("p", second, a).check(Path("s.jsonl"))
    assert kv.get("epoch/p/1") == b"h1" and kv.get("epoch/p/2") == b"h2"


def test_two_hosts_racing_for_a_pod_never_share_an_epoch() -> None:
    kv = MemoryKV()
    a, b = Epochs(kv), Epochs(kv)
    a.current("p"), b.current("p")  # both saw epoch 0 before either took one
    taken = {a.take("p", host="h1"), b.take("p", host="h2")}
    assert taken == {1, 2}


def test_a_stale_hint_costs_probes_not_correctness() -> None:
    kv = MemoryKV()
    epochs = Epochs(kv)
    for host in ("h1", "h2", "h3"):
        epochs.take("p", host=host)
    kv.put("epoch/p", b"1")  # a slow writer put an old hint back
    assert Epochs(kv).current("p") == 3
    assert Epochs(kv).take("p", host="h4") == 4


def test_forgetting_a_pod_drops_its_epochs() -> None:
    kv = MemoryKV()
    directory = Directory(kv)
    directory.place(Placement(pod="p", config={}))
    directory.epochs.take("p", host="h")
    directory.remove("p")
    assert kv.data == {}


def test_placement_is_stable_and_spread() -> None:
    hosts = [f"h{i}" for i in range(4)]
    pods = [f"pod-{i}" for i in range(400)]
    placed = {pod: choose_host(pod, hosts) for pod in pods}
    assert placed == {pod: choose_host(pod, list(reversed(hosts))) for pod in pods}
    counts = [list(placed.values()).count(h) for h in hosts]
    assert min(counts) > 60, counts
    # A host that leaves moves only its own pods.
    rest = {pod: choose_host(pod, hosts[:3]) for pod in pods}
    assert all(rest[p] == placed[p] for p in pods if placed[p] != "h3")


def test_the_owner_is_the_directory_s_word_then_the_hash() -> None:
    directory = Directory(MemoryKV())
    with pytest.raises(FleetError, match="no pod named p"):
        directory.owner("p")
    directory.place(Placement(pod="p", config={}))
    with pytest.raises(FleetError, match="no hosts"):
        directory.owner("p")
    for name in ("h1", "h2"):
        directory.add_host(HostInfo(name=name, node="n"))
    assert directory.owner("p") == choose_host("p", ["h1", "h2"])
    directory.place(Placement(pod="p", config={}, host="elsewhere", epoch=3))
    assert directory.owner("p") == "elsewhere"


def test_a_cluster_without_a_fleet_says_how_to_start_one() -> None:
    with pytest.raises(FleetError, match="pod fleet up"):
        Directory(MemoryKV()).settings()
