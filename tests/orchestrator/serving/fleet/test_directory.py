"""The fleet's directory without Ray: epochs taken once each, fencing the holders of older
ones, and placement that every gateway computes alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.adapters.session import Fence, SessionFenced
from orchestrator.serving.fleet import (
    Directory,
    Epochs,
    FleetError,
    FleetSettings,
    HostInfo,
    MemoryKV,
    Placement,
    choose_host,
    pin_for,
)


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


def test_a_workspace_off_shared_storage_pins_its_pod_to_its_machine(tmp_path: Path) -> None:
    root, shared, own = tmp_path / "root", tmp_path / "nfs", tmp_path / "home"
    for path in (root / "ws", shared / "a", own / "b", tmp_path / "nfs-other"):
        path.mkdir(parents=True)
    settings = FleetSettings(root=str(root), token="t", shared=[str(shared)])
    roots = settings.shared_roots()
    assert pin_for(root / "ws", roots, "m1") is None
    assert pin_for(shared / "a", roots, "m1") is None
    assert pin_for(shared, roots, "m1") is None
    assert pin_for(own / "b", roots, "m1") == "m1"
    # A sibling whose name starts alike is not under it; a link into shared storage is.
    assert pin_for(tmp_path / "nfs-other", roots, "m1") == "m1"
    (own / "link").symlink_to(shared / "a")
    assert pin_for(own / "link", roots, "m1") is None


def test_a_pinned_pod_goes_only_to_a_host_of_its_machine() -> None:
    directory = Directory(MemoryKV())
    directory.add_host(HostInfo(name="a1", node="na", machine="alpha"))
    directory.add_host(HostInfo(name="b1", node="nb", machine="beta"))
    directory.add_host(HostInfo(name="b2", node="nb", machine="beta"))
    directory.place(Placement(pod="p", config={"workspace": "/w"}, pinned_machine="beta"))
    assert {directory.owner("p")} <= {"b1", "b2"}
    # Its owner gone for good: another host of the same machine, never one elsewhere.
    owner = directory.owner("p")
    directory.place(Placement(pod="p", config={}, pinned_machine="beta", host=owner))
    assert directory.owner("p", exclude=owner) == ({"b1", "b2"} - {owner}).pop()
    directory.place(Placement(pod="q", config={}, pinned_machine="gamma"))
    with pytest.raises(FleetError, match=r"pinned to machine gamma .* no host of the fleet"):
        directory.owner("q")


def test_a_pinned_pod_is_unavailable_while_its_machine_has_no_live_node() -> None:
    pinned = Placement(pod="p", config={"workspace": "/home/me/app"}, pinned_machine="beta")
    assert pinned.unavailable(["alpha", "beta"]) is None
    why = pinned.unavailable(["alpha"])
    assert why is not None and "pinned to machine beta" in why and "/home/me/app" in why
    assert Placement(pod="s", config={}).unavailable([]) is None


def test_the_pods_are_named_without_reading_their_placements() -> None:
    class CountingKV(MemoryKV):
        reads = 0

        def get(self, key: str) -> bytes | None:
            CountingKV.reads += 1
            return super().get(key)

    directory = Directory(CountingKV())
    for name in ("p1", "p2"):
        directory.place(Placement(pod=name, config={"workspace": "/w"}))
    directory.add_host(HostInfo(name="h1", node="n"))  # a key of another kind
    CountingKV.reads = 0
    assert directory.pods() == {"p1", "p2"}
    assert CountingKV.reads == 0
    directory.remove("p1")
    assert directory.pods() == {"p2"}
