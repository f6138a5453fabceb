"""The fleet's failure test (issue 26): a node of a 2-node Ray cluster dies, every process at
once, and nothing anyone was told is saved is lost, nothing runs twice, every pod answers.

Usage: ``python -m bench.fleet_kill [--quick] [--sessions N --mid-turn M --in-flight K]``

1. Two Ray nodes start on this machine (``orchestrator.serving.fleet.local``: ``ray start --head``,
   then ``ray start --address=...``, each with its own temp dir), and a fleet on them
   (two ``PodHost`` actors per node, a gateway per node, sessions on a shared directory).
2. ``sessions`` pods are added and each takes one turn, through node A's gateway; the
   scripted provider answers (``--provider scripted``, no model). ``mid_turn`` more pods,
   placed on node B's hosts, are left in the middle of a turn (a ``bash sleep`` running),
   and ``in_flight`` of the first pods on node B are sent a ``run`` just before the kill.
3. Every process of node B is SIGKILLed (its raylet, agents, the host actors, the commands
   they ran). Node B's hosts come back on node A under their names (Ray restarts them) and
   take their pods back under new epochs.

Then every pod is asked ``get_status`` through node A's gateway until it answers; a run in
flight is sent again with its request id (``duplicate`` when the first one was committed);
a pod that comes back ``paused`` is resumed; every pod takes a next turn. Prints one JSON
object: sessions with fewer items than acknowledged (target 0), mid-turn sessions that came
back paused and then finished on ``resume`` (target all), seconds from the kill until every
pod answered (target ≤ 30), user messages committed twice (target 0), pods that took a next
turn (target all), and what the clients of the killed hosts were told.

Needs the ``fleet`` extra (Ray). The full profile (1,000 + 100 pods) loads four host actors
with some 275 pods each; on a small machine run a smaller one with ``--sessions``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import Result, emit, percentile, row  # noqa: E402

FULL = {"sessions": 1000, "mid_turn": 100, "in_flight": 100}
QUICK = {"sessions": 50, "mid_turn": 5, "in_flight": 5}
ANSWER_TARGET_S = 30.0
CONCURRENCY = 32
"""Clients at once while the sessions are made and while they take their next turn."""
PROBES = 4096
"""Clients at once asking ``get_status`` after the kill (each waits until its pod answers):
every session's, as each pod's clients ask on their own. A smaller cap made the pods of the
live node wait in the bench's own queue behind those of the dead one (p50 24.6 s)."""
GIVE_UP_S = 300.0
"""After the kill, how long a pod may take to answer before the run counts it as lost."""
COMMITTED = {"user_message", "text_done", "tool_call_done", "tool_result", "system_note"}
"""Events that tell a client an item is on disk (each carries the item's ``seq``)."""

Kind = Literal["idle", "mid_turn", "in_flight"]


@dataclass
class Session:
    """One pod of the run, and what its clients were told."""

    name: str
    kind: Kind
    socket: str = ""
    path: Path = Path()
    acked: set[int] = field(default_factory=set)
    """The seqs of the items a client was told are saved."""
    answered_s: float | None = None
    """Seconds from the kill to its first ``status`` reply."""
    came_back: str = ""
    """Its status when it first answered after the kill."""
    replay: str = ""
    """A run in flight, sent again: ``duplicate`` or how the new run ended."""
    resumed: str = ""
    next_turn: str = ""
    failure: str = ""
    """Why a step after the kill failed (a timeout, a closed connection)."""
    told: str = "nothing"
    """What the client streaming its turn got when its host died: an ``error`` or ``alert``
    event, ``closed`` with neither, ``served`` (its run ended: a line the gateway had not
    yet passed on when the host died went to the restarted one), or ``nothing`` (still open
    at the end)."""


class Link:
    """One client connection to a pod's gateway socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, socket: str) -> Link:
        """Connect to the gateway's socket of a pod."""
        reader, writer = await asyncio.open_unix_connection(socket, limit=1 << 24)
        return cls(reader, writer)

    async def send(self, method: str, params: dict[str, Any] | None = None, **extra: Any) -> None:
        """Send one request line."""
        self.writer.write(json.dumps({"method": method, "params": params or {}, **extra}).encode())
        self.writer.write(b"\n")
        await self.writer.drain()

    async def until(
        self, session: Session, done: Any, timeout: float
    ) -> tuple[str, dict[str, Any]]:
        """Read events (noting what is acknowledged) until ``done(event, data)``; that event.
        ``("closed", {})`` when the connection ends first."""
        while True:
            line = await asyncio.wait_for(self.reader.readline(), timeout)
            if not line:
                return "closed", {}
            raw = json.loads(line)
            event, data = raw["event"], raw.get("data") or {}
            if event in COMMITTED and isinstance(data.get("seq"), int):
                session.acked.add(data["seq"])
            if done(event, data):
                return event, data

    def close(self) -> None:
        """Close the connection."""
        self.writer.close()


def _ended(event: str, data: dict[str, Any]) -> bool:
    return event in ("run_end", "error")


async def run_turn(
    session: Session, method: str, params: dict[str, Any], timeout: float = 120.0
) -> str:
    """Send a run (or resume) and wait for its end: the run's result, or the error's code."""
    link = await Link.open(session.socket)
    try:
        await link.send(method, params)
        event, data = await link.until(session, _ended, timeout)
    finally:
        link.close()
    if event == "run_end":
        return str(data["result"])
    return str(data.get("code", event))


async def ask_status(session: Session, timeout: float) -> str:
    """The pod's status (``idle``, ``paused``...), as ``get_status`` answers it."""
    link = await Link.open(session.socket)
    try:
        await link.send("get_status", id="probe")
        event, data = await link.until(
            session,
            lambda e, d: e == "error" or (e == "status" and d.get("id") == "probe"),
            timeout,
        )
    finally:
        link.close()
    if event != "status":
        raise ConnectionError(f"{session.name}: {event} {data.get('message', '')}")
    return str(data["status"])


# -- the run -----------------------------------------------------------------------------------


def _script(root: Path, name: str, second: dict[str, Any] | None) -> Path:
    """A pod's replies: quick ones, and ``second`` for its second turn. A pod reloaded on
    another host reads its script from the top again, so every other reply is a quick one."""
    quick = {"text": f"{name} here.", "chunk_size": 64}
    replies = [quick, second or quick] + [quick] * 6
    path = root / "scripts" / f"{name}.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


def _config(root: Path, name: str, second: dict[str, Any] | None = None) -> dict[str, Any]:
    workspace = root / "ws" / name
    workspace.mkdir(parents=True)
    (workspace / "README.md").write_text(f"# {name}\n")
    return {
        "workspace": str(workspace),
        "name": name,
        "provider": "scripted",
        "scripted_script": str(_script(root, name, second)),
        "sandbox": {"mode": "off"},
        "allow_bash": True,
    }


SLEEP = {
    "text": "running the long job",
    "tool_calls": [{"name": "bash", "input": {"command": "echo started; sleep 900"}}],
}
"""A mid-turn pod's second reply: a command that runs until its node dies. It prints first:
its output is the sign it runs (``tool_call_done`` comes before the call's write-ahead record,
and a call killed before that record never ran, so ``resume`` would run it)."""
SLOW = {"text": "a slow answer " * 8, "chunk_size": 8, "chunk_delay_s": 0.1}
"""An in-flight pod's second reply: streams for about a second."""


def _names(prefix: str, count: int, on_b: bool | None, hosts: dict[str, bool]) -> list[str]:
    """``count`` pod names; with ``on_b``, only names that rendezvous hashing places on (or
    off) node B's hosts (``hosts``: name → on node B)."""
    from orchestrator.serving.fleet.directory import choose_host

    found: list[str] = []
    index = 0
    while len(found) < count:
        name = f"{prefix}{index:04d}"
        index += 1
        if on_b is None or hosts[choose_host(name, list(hosts))] == on_b:
            found.append(name)
    return found


async def _gather(jobs: list[Any], limit: int) -> list[Any]:
    gate = asyncio.Semaphore(limit)

    async def one(job: Any) -> Any:
        async with gate:
            return await job

    return await asyncio.gather(*(one(j) for j in jobs))


async def _add(root: Path, control: Path, session: Session, second: dict[str, Any] | None) -> None:
    from orchestrator.serving.host import ask_host

    config = await asyncio.to_thread(_config, root, session.name, second)
    placed = await ask_host("load", {"config": config}, path=control)
    session.socket, session.path = placed["socket"], Path(placed["config"]["session"])
    result = await run_turn(session, "run", {"input": "hello", "request_id": f"{session.name}-1"})
    if result != "finished":
        raise RuntimeError(f"{session.name}: its first turn ended {result}")


async def _start_mid_turn(session: Session, streams: list[asyncio.Task[None]]) -> None:
    """Start the turn that will be cut: back once its command runs (its output streams)."""
    link = await Link.open(session.socket)
    await link.send("run", {"input": "run the long job", "request_id": f"{session.name}-2"})
    await link.until(session, lambda e, d: e == "tool_output_delta", 60.0)
    streams.append(asyncio.create_task(_listen(link, session)))


async def _listen(link: Link, session: Session) -> None:
    """Keep a client of a pod on node B reading: what is it told when the host dies?"""
    try:
        ends = ("error", "alert", "run_end")
        event, _ = await link.until(session, lambda e, d: e in ends, GIVE_UP_S)
        session.told = "served" if event == "run_end" else event
    except TimeoutError:
        session.told = "nothing"
    except (ConnectionError, ValueError):
        session.told = "closed"
    finally:
        link.close()


async def _wait_for_answer(session: Session, killed_at: float) -> None:
    """Ask until the pod answers (through node A's gateway, which waits for its host)."""
    while time.monotonic() - killed_at < GIVE_UP_S:
        try:
            session.came_back = await ask_status(session, GIVE_UP_S)
            session.answered_s = time.monotonic() - killed_at
            return
        except (OSError, ConnectionError, TimeoutError, ValueError):
            await asyncio.sleep(0.25)


async def _recover(session: Session) -> None:
    """After the kill: the run in flight again, a paused turn resumed, then a next turn (a
    step that fails is noted on the session, as its result)."""
    try:
        await _recover_steps(session)
    except (OSError, ConnectionError, TimeoutError, ValueError, KeyError) as exc:
        session.failure = f"{type(exc).__name__}: {exc}"[:200]


async def _recover_steps(session: Session) -> None:
    if session.kind == "in_flight":
        params = {"input": "the run in flight", "request_id": f"{session.name}-2"}
        session.replay = await run_turn(session, "run", params)
        session.came_back = await ask_status(session, 60.0)
    if session.came_back == "paused":
        session.resumed = await run_turn(session, "resume", {})
    params = {"input": "and the next one", "request_id": f"{session.name}-3"}
    session.next_turn = await run_turn(session, "run", params)


def _audit(session: Session) -> dict[str, int]:
    """What its session file holds against what its clients were told."""
    from orchestrator.adapters.session import load_session
    from orchestrator.core.history import UserMessage

    loaded = load_session(session.path)
    seqs = {item.seq for item in loaded.items}
    ids = [i.request_id for i in loaded.items if isinstance(i, UserMessage) and i.request_id]
    return {
        "missing": len(session.acked - seqs),
        "doubled": len(ids) - len(set(ids)),
        "warnings": len(loaded.warnings),
    }


async def scenario(
    root: Path, control: Path, hosts: dict[str, bool], p: dict[str, int], b: Any
) -> dict[str, Any]:
    """Make the sessions, kill node B, bring every pod back; the raw figures."""
    from orchestrator.serving.fleet.directory import choose_host

    idle = [Session(n, "idle") for n in _names("s", p["sessions"], None, hosts)]
    # The runs in flight go to pods of node B: theirs are the hosts that die.
    on_b = [s for s in idle if hosts[choose_host(s.name, list(hosts))]]
    for session in on_b[: p["in_flight"]]:
        session.kind = "in_flight"
    mid = [Session(n, "mid_turn") for n in _names("m", p["mid_turn"], True, hosts)]
    everyone = idle + mid
    started = time.monotonic()
    await _gather(
        [_add(root, control, s, SLOW if s.kind == "in_flight" else None) for s in idle]
        + [_add(root, control, s, SLEEP) for s in mid],
        CONCURRENCY,
    )
    made_s = time.monotonic() - started
    streams: list[asyncio.Task[None]] = []
    await _gather([_start_mid_turn(s, streams) for s in mid], CONCURRENCY)
    # Their pods hold their scripts in memory now; a pod reloaded after the kill reads its
    # file from the top, and must not run the long job again as its next turn.
    for session in everyone:
        if session.kind != "idle":
            _script(root, session.name, None)

    # The runs in flight: sent, and the node killed while they stream (some committed, some
    # perhaps not yet).
    flying = [s for s in idle if s.kind == "in_flight"]
    links = await asyncio.gather(*(Link.open(s.socket) for s in flying))
    for session, link in zip(flying, links, strict=True):
        await link.send("run", {"input": "the run in flight", "request_id": f"{session.name}-2"})
        streams.append(asyncio.create_task(_listen(link, session)))
    await asyncio.sleep(0.05)  # some committed, some perhaps not yet
    killed = b.kill()
    killed_at = time.monotonic()

    await _gather([_wait_for_answer(s, killed_at) for s in everyone], PROBES)
    all_answered_s = time.monotonic() - killed_at
    await _gather([_recover(s) for s in everyone if s.answered_s is not None], CONCURRENCY)
    for task in streams:
        task.cancel()
    audits = [_audit(s) for s in everyone]
    return {
        "sessions": everyone,
        "audits": audits,
        "made_s": made_s,
        "killed": len(killed),
        "all_answered_s": all_answered_s,
    }


class HostsNotSpread(RuntimeError):
    """Ray placed every host on one node (its soft affinity, on a loaded machine): the run
    cannot kill one node's hosts and not the other's. Nothing was measured; run again."""


def _until_it_runs_work(node: str, timeout_s: float = 120.0) -> None:
    """Wait until ``node`` has run a task: the fleet places its hosts with soft affinity, which
    puts them on the other node while this one still starts its workers (a loaded CI machine),
    and the scenario needs hosts on both."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def here() -> str:
        return str(ray.get_runtime_context().get_node_id())

    strategy = NodeAffinitySchedulingStrategy(node, soft=False)
    ray.get(here.options(scheduling_strategy=strategy).remote(), timeout=timeout_s)


def run(params: dict[str, int], quick: bool, *, keep: bool = False) -> Result:
    """Start the cluster and the fleet, run :func:`scenario`, tear everything down (``keep``:
    but its folder, with Ray's logs, which the run names on stderr)."""
    import ray

    from orchestrator.serving.fleet.cluster import deploy, live_nodes
    from orchestrator.serving.fleet.directory import NAMESPACE, Directory
    from orchestrator.serving.fleet.local import node_id, start_node
    from orchestrator.serving.fleet.raykv import RayKV

    # Short: Ray's and the gateways' Unix sockets live under it.
    root = Path(tempfile.mkdtemp(prefix="fk-", dir="/tmp"))
    state = root / "state"
    env = {"XDG_STATE_HOME": str(state), "XDG_CONFIG_HOME": str(root / "config")}
    env["XDG_RUNTIME_DIR"] = str(root / "run")
    for folder in ("state", "config", "run", "scripts", "ws"):
        (root / folder).mkdir(mode=0o700)
    nodes = []
    try:
        setup = time.monotonic()
        a = start_node(root / "a", label="fleet_kill_a", env=env)
        nodes.append(a)
        b = start_node(root / "b", label="fleet_kill_b", address=a.address, env=env)
        nodes.append(b)
        ray.init(
            address=a.address,
            namespace=NAMESPACE,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
        deadline = time.monotonic() + 60
        while len(live_nodes()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        node_a, node_b = node_id(a.label), node_id(b.label)
        _until_it_runs_work(node_b)
        out = deploy(root / "shared", hosts_per_node=2, idle_unload_s=3600.0)
        control = Path(out["gateways"][node_a]["dir"]) / "control.sock"
        hosts = {h.name: h.node == node_b for h in Directory(RayKV()).hosts()}
        if not any(hosts.values()) or all(hosts.values()):
            raise HostsNotSpread(f"the hosts are not spread over both nodes: {hosts}")
        setup_s = time.monotonic() - setup
        raw = asyncio.run(scenario(root, control, hosts, params, b))
        placements = Directory(RayKV()).placements()
        nodes_now = {p.node for p in placements if p.node}
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        for node in reversed(nodes):
            node.stop()
        if keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return _report(params, quick, raw, setup_s, node_b in nodes_now)


def _report(
    params: dict[str, int], quick: bool, raw: dict[str, Any], setup_s: float, b_still_used: bool
) -> Result:
    sessions: list[Session] = raw["sessions"]
    audits: list[dict[str, int]] = raw["audits"]
    mid = [s for s in sessions if s.kind == "mid_turn"]
    flying = [s for s in sessions if s.kind == "in_flight"]
    answered = [s.answered_s for s in sessions if s.answered_s is not None]
    lost = sum(1 for a in audits if a["missing"])
    doubled = sum(a["doubled"] for a in audits)
    paused_then_finished = sum(
        1 for s in mid if s.came_back == "paused" and s.resumed == "finished"
    )
    next_turn = sum(1 for s in sessions if s.next_turn == "finished")
    slowest = max(answered) if len(answered) == len(sessions) else None
    told = {
        kind: {
            k: sum(1 for s in group if s.told == k)
            for k in ("error", "alert", "closed", "served", "nothing")
        }
        for kind, group in (("mid_turn", mid), ("in_flight", flying))
    }
    results = {
        "sessions": len(sessions),
        "params": params,
        "setup_s": round(setup_s, 1),
        "sessions_made_s": round(raw["made_s"], 1),
        "processes_killed": raw["killed"],
        "sessions_missing_acknowledged_items": lost,
        "mid_turn_paused_then_finished": paused_then_finished,
        "mid_turn": len(mid),
        "answered": len(answered),
        "all_answered_s": round(slowest, 1) if slowest is not None else None,
        "answer_s_p50": round(percentile(answered, 50), 1) if answered else None,
        "user_messages_committed_twice": doubled,
        "next_turn_finished": next_turn,
        "in_flight_replays": {
            k: sum(1 for s in flying if s.replay == k) for k in {s.replay for s in flying}
        },
        "clients_of_killed_turns_told": told,
        "load_warnings": sum(a["warnings"] for a in audits),
        "failures": {s.name: s.failure for s in sessions if s.failure},
        "came_back": {
            k: sum(1 for s in sessions if s.came_back == k) for k in {s.came_back for s in sessions}
        },
        "node_b_in_placements_after": b_still_used,
    }
    return {
        "benchmark": "fleet_kill",
        "quick": quick,
        "params": params,
        "results": results,
        "table": [
            row(
                "sessions with fewer items than acknowledged",
                lost,
                "sessions",
                target="0",
                met=lost == 0,
            ),
            row(
                "mid-turn sessions paused, then finished on resume",
                paused_then_finished,
                "sessions",
                target=f"{len(mid)}/{len(mid)}",
                met=paused_then_finished == len(mid),
            ),
            row(
                "time until every session answers",
                results["all_answered_s"],
                "s",
                target=f"≤ {ANSWER_TARGET_S:g}",
                met=slowest is not None and slowest <= ANSWER_TARGET_S,
            ),
            row("user messages committed twice", doubled, "messages", target="0", met=doubled == 0),
            row(
                "sessions that take a next turn",
                next_turn,
                "sessions",
                target=f"{len(sessions)}/{len(sessions)}",
                met=next_turn == len(sessions),
            ),
        ],
    }


def main(argv: list[str] | None = None) -> None:
    """Parse the profile, run it, print the JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="50 sessions, 5 mid-turn, 5 in flight")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (Ray's logs)")
    parser.add_argument("--sessions", type=int)
    parser.add_argument("--mid-turn", type=int)
    parser.add_argument("--in-flight", type=int)
    args = parser.parse_args(argv)
    params = dict(QUICK if args.quick else FULL)
    for key in params:
        given = getattr(args, key)
        if given is not None:
            params[key] = given
    emit(run(params, args.quick, keep=args.keep))


if __name__ == "__main__":
    main()
