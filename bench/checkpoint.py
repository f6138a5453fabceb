"""The cost of workspace checkpoints (:mod:`orchestrator.capabilities.checkpoints`, issue 22).

For a workspace of 1,000 and of 10,000 small files (100 to a folder): the first snapshot,
then a snapshot after each of 30 rounds that change 5 files, and one of an unchanged
workspace. Then, on the 1,000-file workspace: restoring a checkpoint after 100 files changed
(60 edited, 20 deleted, 20 created; the time includes the snapshot taken before restoring)
and planning the same restore; and the disk a store takes (``du`` of the shadow repository)
after the first snapshot and after 100 more checkpoints of 5 changed files each.

    python -m bench.checkpoint [--quick]
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import Result, TableRow, latency_stats, main_for, row

NAME = "checkpoint"
SIZES = (1_000, 10_000)
QUICK_SIZES = (200, 1_000)
ROUNDS = 30
QUICK_ROUNDS = 5
CHANGED_PER_ROUND = 5
RESTORE_FILES = 100
QUICK_RESTORE_FILES = 20
RESTORE_REPEATS = 10
QUICK_RESTORE_REPEATS = 2
DISK_CHECKPOINTS = 100
QUICK_DISK_CHECKPOINTS = 10
TARGET_P50_MS = 50.0
PER_FOLDER = 100


def _file(ws: Path, i: int) -> Path:
    return ws / f"pkg{i // PER_FOLDER:03d}" / f"module_{i}.py"


def make_workspace(ws: Path, n: int) -> None:
    """``n`` small Python-like files, 100 to a folder, and a .gitignore."""
    ws.mkdir(parents=True)
    (ws / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    for i in range(n):
        path = _file(ws, i)
        if i % PER_FOLDER == 0:
            path.parent.mkdir()
        path.write_text(f'"""Module {i}."""\n\n\ndef f_{i}(x):\n    return x + {i}\n' * 4)


def du(path: Path) -> int:
    """Bytes of disk the files under ``path`` take (allocated blocks, like ``du``)."""
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


def _store(ws: Path, git_dir: Path) -> Any:
    from orchestrator.capabilities.checkpoints import CheckpointStore

    return CheckpointStore(
        ws, git_dir, max_file_bytes=2 * 1024 * 1024, max_total_bytes=1024 * 1024 * 1024
    )


def snapshots(root: Path, n: int, rounds: int) -> dict[str, Any]:
    """First snapshot, then ``rounds`` snapshots with 5 files changed before each."""
    ws = root / f"ws{n}"
    make_workspace(ws, n)
    with _store(ws, root / f"store{n}") as store:
        start = time.perf_counter()
        first = store.snapshot()
        first_s = time.perf_counter() - start
        if first.files != n + 1:
            raise RuntimeError(f"the first snapshot holds {first.files} files, not {n + 1}")
        samples: list[float] = []
        for r in range(rounds):
            for k in range(CHANGED_PER_ROUND):
                path = _file(ws, (r * 7919 + k * 104_729) % n)
                with path.open("a") as out:
                    out.write(f"# round {r}\n")
            start = time.perf_counter()
            snap = store.snapshot()
            samples.append(time.perf_counter() - start)
            if not snap.new:
                raise RuntimeError("a snapshot after changes reused the previous checkpoint")
        unchanged: list[float] = []
        for _ in range(max(3, rounds // 3)):
            start = time.perf_counter()
            if store.snapshot().new:
                raise RuntimeError("a snapshot of an unchanged workspace made a new checkpoint")
            unchanged.append(time.perf_counter() - start)
        size_start = time.perf_counter()
        size = store.measure()
        measure_s = time.perf_counter() - size_start
    return {
        "files": n,
        "first_snapshot_ms": first_s * 1000.0,
        "snapshot_5_changed": latency_stats(samples),
        "snapshot_unchanged": latency_stats(unchanged),
        "measure_ms": measure_s * 1000.0,
        "measured_bytes": size.bytes,
    }


def _change(ws: Path, n: int, count: int, salt: int) -> None:
    """Edit 60 %, delete 20 % and create 20 % of ``count`` files."""
    edits, deletes = count * 6 // 10, count * 2 // 10
    creates = count - edits - deletes
    half = n // 2  # edits in the first half, deletions in the second: never the same file
    for k in range(edits):
        with _file(ws, (salt * count + k) % half).open("a") as out:
            out.write(f"# edit {salt}\n")
    for k in range(deletes):
        _file(ws, half + (salt * count + k) % half).unlink()
    for k in range(creates):
        path = ws / "new" / f"d{k % 4}" / f"created_{salt}_{k}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"created = {k}\n")


def restores(root: Path, n: int, count: int, repeats: int) -> dict[str, Any]:
    """Plan and restore a checkpoint after ``count`` files changed, ``repeats`` times."""
    ws = root / f"rws{n}"
    make_workspace(ws, n)
    plan_samples: list[float] = []
    restore_samples: list[float] = []
    with _store(ws, root / f"rstore{n}") as store:
        checkpoint = store.snapshot()
        for r in range(repeats):
            _change(ws, n, count, salt=r)
            start = time.perf_counter()
            plan = store.plan(checkpoint.id)
            plan_samples.append(time.perf_counter() - start)
            start = time.perf_counter()
            done = store.restore(checkpoint.id)
            restore_samples.append(time.perf_counter() - start)
            touched = len(done.restore) + len(done.delete)
            if touched != count or (plan.restore, plan.delete) != (done.restore, done.delete):
                raise RuntimeError(f"the restore touched {touched} files, not {count}")
        after = store.plan(checkpoint.id)
        if after.restore or after.delete:
            raise RuntimeError("the workspace does not match the checkpoint after restoring")
    return {
        "files": n,
        "changed": count,
        "plan": latency_stats(plan_samples),
        "restore": latency_stats(restore_samples),
    }


def disk(root: Path, n: int, checkpoints: int) -> dict[str, Any]:
    """``du`` of a store after its first snapshot and after ``checkpoints`` more."""
    ws = root / f"dws{n}"
    make_workspace(ws, n)
    git_dir = root / f"dstore{n}"
    with _store(ws, git_dir) as store:
        store.snapshot()
        first = du(git_dir)
        for r in range(checkpoints):
            for k in range(CHANGED_PER_ROUND):
                with _file(ws, (r * 31 + k * 211) % n).open("a") as out:
                    out.write(f"# checkpoint {r}\n")
            store.snapshot()
        after = du(git_dir)
    return {
        "files": n,
        "workspace_bytes": du(ws),
        "after_first_bytes": first,
        "checkpoints": checkpoints,
        "after_checkpoints_bytes": after,
        "per_checkpoint_bytes": (after - first) / checkpoints,
    }


SHARE_TURNS = 8
QUICK_SHARE_TURNS = 2
TARGET_SHARE = 0.05


async def _turns(ws: Path, session: Path, *, checkpoints: bool, turns: int) -> list[float]:
    """Wall time of ``turns`` turns of the offline provider as ``pod chat`` paces it: a
    streamed reply that writes one file (a round that checkpoints), then a streamed answer."""
    from bench._common import bench_config
    from orchestrator.adapters.providers.scripted import (
        DEMO_CHUNK_DELAY_S,
        ScriptedProvider,
        ScriptedReply,
        ScriptedToolCall,
    )
    from orchestrator.protocol import parse_request
    from orchestrator.serving.pod import build_pod

    text = "Looking at the workspace and writing the change now. " * 2
    provider = ScriptedProvider()
    # Unattended: nobody is there to approve the writes.
    config = bench_config(
        ws.parent,
        session=session,
        checkpoints=checkpoints,
        permissions={"mode": "accept-edits"},
    )
    assert config.workspace == ws
    pod = build_pod(config, broadcast=lambda line: None, provider=provider)
    _, params = parse_request(b'{"method": "run", "params": {"input": "change a file"}}')
    times: list[float] = []
    try:
        for n in range(turns):
            write = ScriptedToolCall(
                name="write_file", input={"path": f"out/note_{n}.md", "content": f"note {n}\n"}
            )
            provider.replies = [
                ScriptedReply(text=text, tool_calls=[write], chunk_delay_s=DEMO_CHUNK_DELAY_S),
                ScriptedReply(text=text, chunk_delay_s=DEMO_CHUNK_DELAY_S),
            ]
            start = time.perf_counter()
            pod.methods.handle("run", params, None, lambda line: None)
            await pod.controller.wait_idle()
            times.append(time.perf_counter() - start)
    finally:
        pod.controller.transcript.session.close()
    return times


def round_share(root: Path, n: int, turns: int) -> dict[str, Any]:
    """How much of a turn's wall time its two checkpoints (turn start, the writing round)
    take, in a workspace of ``n`` files, on the offline provider's pacing."""
    import asyncio

    ws = root / f"share_{n}" / "ws"
    make_workspace(ws, n)
    off = asyncio.run(_turns(ws, root / f"share_{n}" / "off.jsonl", checkpoints=False, turns=turns))
    on = asyncio.run(_turns(ws, root / f"share_{n}" / "on.jsonl", checkpoints=True, turns=turns))
    # The first turn of "on" pays the store's first snapshot of everything: reported apart.
    on_p50 = latency_stats(on[1:] or on[:1])["p50_ms"]
    off_p50 = latency_stats(off[1:] or off[:1])["p50_ms"]
    return {
        "files": n,
        "turns": turns,
        "turn_p50_ms_off": off_p50,
        "turn_p50_ms_on": on_p50,
        "first_turn_ms_on": on[0] * 1000,
        "share": max(0.0, (on_p50 - off_p50) / on_p50) if on_p50 else 0.0,
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` uses small workspaces and few rounds."""
    sizes = QUICK_SIZES if quick else SIZES
    rounds = QUICK_ROUNDS if quick else ROUNDS
    count = QUICK_RESTORE_FILES if quick else RESTORE_FILES
    repeats = QUICK_RESTORE_REPEATS if quick else RESTORE_REPEATS
    kept = QUICK_DISK_CHECKPOINTS if quick else DISK_CHECKPOINTS
    root = Path(tempfile.mkdtemp(prefix="ckpt_bench_"))
    try:
        by_size = {str(n): snapshots(root, n, rounds) for n in sizes}
        restore = restores(root, sizes[0], count, repeats)
        space = disk(root, sizes[0], kept)
        share_turns = QUICK_SHARE_TURNS if quick else SHARE_TURNS
        share = round_share(root, sizes[-1], share_turns)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    table: list[TableRow] = []
    for n in sizes:
        fig = by_size[str(n)]
        p50 = fig["snapshot_5_changed"]["p50_ms"]
        target = f"≤ {TARGET_P50_MS:g} ms" if n == 10_000 else None
        table.append(
            row(
                f"snapshot p50, {n:,} files, 5 changed",
                p50,
                "ms",
                target=target,
                met=(p50 <= TARGET_P50_MS) if target else None,
            )
        )
        table.append(
            row(f"snapshot p95, {n:,} files, 5 changed", fig["snapshot_5_changed"]["p95_ms"], "ms")
        )
        table.append(
            row(f"snapshot p50, {n:,} files, unchanged", fig["snapshot_unchanged"]["p50_ms"], "ms")
        )
        table.append(row(f"first snapshot, {n:,} files", fig["first_snapshot_ms"], "ms"))
    table.append(
        row(
            f"restore p50, {count} changed files ({sizes[0]:,} in all)",
            restore["restore"]["p50_ms"],
            "ms",
            note="includes the snapshot taken before restoring",
        )
    )
    table.append(row(f"plan p50, {count} changed files", restore["plan"]["p50_ms"], "ms"))
    table.append(
        row(f"store on disk after {kept} checkpoints", space["after_checkpoints_bytes"], "B")
    )
    table.append(row("disk per checkpoint (5 files changed)", space["per_checkpoint_bytes"], "B"))
    table.append(
        row(
            f"checkpoints' share of a turn, {sizes[-1]:,} files, offline provider",
            round(100 * share["share"], 1),
            "%",
            target=f"≤ {100 * TARGET_SHARE:g} %",
            met=share["share"] <= TARGET_SHARE,
            note="two snapshots a turn: at its start and before the round that writes",
        )
    )
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {
            "sizes": list(sizes),
            "rounds": rounds,
            "changed_per_round": CHANGED_PER_ROUND,
            "restore_files": count,
            "restore_repeats": repeats,
            "disk_checkpoints": kept,
        },
        "results": {
            "snapshots": by_size,
            "restore": restore,
            "disk": space,
            "round_share": share,
        },
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
