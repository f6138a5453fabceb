"""The checkpoint store on real workspaces with real git: snapshot, plan, restore."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import threading
from pathlib import Path

import pytest

from orchestrator.capabilities.checkpoints import (
    CheckpointError,
    CheckpointStore,
    GitUnavailableError,
    RestoreError,
    UnknownCheckpointError,
)
from orchestrator.capabilities.checkpoints import files as files_module
from tests.orchestrator.capabilities.checkpoints.conftest import git, state


def _reasons(plan_left: list[object]) -> dict[str, str]:
    return {entry.path: entry.reason for entry in plan_left}  # type: ignore[attr-defined]


def _mutate(ws: Path) -> None:
    """What a turn might do: edits, new files in new folders, deletions, mode and link changes."""
    (ws / "README.md").write_text("# Project\n\nOther words.\nAnd more.\n")
    shutil.rmtree(ws / "src" / "pkg")
    (ws / "src" / "new").mkdir()
    (ws / "src" / "new" / "deep").mkdir()
    (ws / "src" / "new" / "deep" / "made.py").write_text("made = True\n")
    (ws / "notes.txt").write_text("created\n")
    (ws / "data.bin").write_bytes(b"\x00\xff" * 100)
    (ws / "run.sh").chmod(0o644)
    (ws / "app-link").unlink()
    os.symlink("README.md", ws / "app-link")
    os.symlink("src", ws / "src-link")


def test_restore_brings_the_workspace_back_byte_for_byte(
    workspace: Path, store: CheckpointStore
) -> None:
    before = state(workspace)
    checkpoint = store.snapshot()
    assert checkpoint.new and checkpoint.files == 6 and checkpoint.skipped == []
    _mutate(workspace)
    assert state(workspace) != before

    plan = store.restore(checkpoint.id)

    assert state(workspace) == before  # the folders made since are gone too
    assert plan.restore == ["README.md", "app-link", "data.bin", "run.sh", "src/pkg/util.py"]
    assert plan.delete == ["notes.txt", "src-link", "src/new/deep/made.py"]
    assert plan.before is not None and plan.before != checkpoint.id
    # The rewind is not a loss: the state it replaced is a checkpoint too.
    store.restore(plan.before)
    assert (workspace / "notes.txt").read_text() == "created\n"
    assert (workspace / "src" / "new" / "deep" / "made.py").exists()
    assert os.readlink(workspace / "app-link") == "README.md"


def test_an_unchanged_workspace_reuses_the_checkpoint(
    workspace: Path, store: CheckpointStore
) -> None:
    first = store.snapshot()
    again = store.snapshot()
    assert (again.id, again.new, again.files) == (first.id, False, first.files)
    (workspace / "README.md").write_text("changed\n")
    assert store.snapshot().id != first.id


def test_ignored_files_are_left_alone_and_listed(workspace: Path, store: CheckpointStore) -> None:
    (workspace / ".gitignore").write_text("*.log\nbuild/\n")
    (workspace / "app.log").write_text("old log\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_bytes(b"\x7fELF")
    checkpoint = store.snapshot()
    (workspace / "app.log").write_text("new log\n")
    (workspace / "build" / "out.o").write_bytes(b"\x7fELF rebuilt")
    (workspace / "README.md").write_text("changed\n")

    plan = store.restore(checkpoint.id)

    assert plan.restore == ["README.md"]
    assert (workspace / "app.log").read_text() == "new log\n"
    assert (workspace / "build" / "out.o").read_bytes() == b"\x7fELF rebuilt"
    reasons = _reasons(plan.left)
    assert reasons["app.log"] == "ignored" and reasons["build/"] == "ignored"


def test_a_file_over_the_cap_is_skipped_and_left_alone(
    workspace: Path, store: CheckpointStore
) -> None:
    big = workspace / "big.dat"
    big.write_bytes(b"a" * (64 * 1024 + 1))
    checkpoint = store.snapshot()
    assert checkpoint.skipped == ["big.dat"]
    size = store.measure()
    assert size.too_large == ["big.dat"] and not size.over_budget
    big.write_bytes(b"b" * (64 * 1024 + 1))
    (workspace / "README.md").write_text("changed\n")

    plan = store.restore(checkpoint.id)

    assert big.read_bytes() == b"b" * (64 * 1024 + 1)
    assert _reasons(plan.left)["big.dat"] == "too_large"
    assert "big.dat" not in plan.restore + plan.delete


def test_a_file_that_grew_past_the_cap_is_not_overwritten(
    workspace: Path, store: CheckpointStore
) -> None:
    # Its new content was never saved: putting the old one back would lose it for good.
    checkpoint = store.snapshot()
    (workspace / "README.md").write_bytes(b"x" * (64 * 1024 + 1))
    plan = store.restore(checkpoint.id)
    assert (workspace / "README.md").read_bytes() == b"x" * (64 * 1024 + 1)
    assert _reasons(plan.left)["README.md"] == "too_large"


def test_measure_counts_what_a_snapshot_takes_and_tells_when_it_is_over_budget(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "huge.log").write_bytes(b"z" * 5000)
    with CheckpointStore(
        workspace, tmp_path / "small", max_file_bytes=1000, max_total_bytes=50
    ) as small:
        size = small.measure()
        expected = sum(
            (workspace / p).lstat().st_size
            for p in ("README.md", "src/app.py", "src/pkg/util.py", "run.sh", "app-link")
        ) + len("*.log\n")
        assert (size.files, size.bytes, size.too_large) == (6, expected, ["data.bin"])
        assert size.over_budget is True
        assert size.to_json()["over_budget"] == size.over_budget


def test_the_users_own_git_is_never_touched(workspace: Path, store: CheckpointStore) -> None:
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "first")
    dot_git = workspace / ".git"

    def fingerprint() -> dict[str, object]:
        out: dict[str, object] = {}
        for path in sorted(dot_git.rglob("*")):
            st = path.lstat()
            content = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            out[str(path)] = (st.st_mode, st.st_mtime_ns, hashlib.sha256(content).hexdigest())
        return out

    before = fingerprint()
    checkpoint = store.snapshot()
    _mutate(workspace)
    store.snapshot()
    plan = store.plan(checkpoint.id)
    store.restore(checkpoint.id)
    assert fingerprint() == before
    assert not any(p.startswith(".git") for p in plan.restore + plan.delete)


def test_a_git_file_and_a_nested_repository_stay_out(
    workspace: Path, store: CheckpointStore
) -> None:
    (workspace / ".git").write_text("gitdir: /somewhere/else/.git/worktrees/ws\n")
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    (workspace / "vendor" / "README").write_text("vendored code\n")
    (nested / "lib.c").write_text("int x;\n")
    git(nested, "init", "-q")
    git(nested, "add", "-A")
    git(nested, "commit", "-qm", "lib")
    checkpoint = store.snapshot()
    (workspace / ".git").write_text("gitdir: changed\n")
    (nested / "lib.c").write_text("int y;\n")

    plan = store.restore(checkpoint.id)

    assert (workspace / ".git").read_text() == "gitdir: changed\n"
    assert (nested / "lib.c").read_text() == "int y;\n"
    assert checkpoint.files == 7  # the six files and vendor/README
    assert _reasons(plan.left)["vendor/lib/"] == "not_checkpointed"


def test_a_fifo_in_the_workspace_is_never_opened(workspace: Path, store: CheckpointStore) -> None:
    os.mkfifo(workspace / "pipe")
    checkpoint = store.snapshot()  # a hang here would be the FIFO being opened
    (workspace / "README.md").unlink()
    os.mkfifo(workspace / "README.md")  # a tracked file replaced by a FIFO
    result: dict[str, object] = {}

    def run() -> None:
        result["snapshot"] = store.snapshot()
        result["plan"] = store.restore(checkpoint.id)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)  # a safety net so a regression fails instead of hanging the suite
    assert not worker.is_alive(), "a FIFO was opened"
    plan = result["plan"]
    assert _reasons(plan.left)["README.md"] == "blocked"  # type: ignore[attr-defined]
    assert state(workspace)["pipe"] == ("special",)
    assert state(workspace)["README.md"] == ("special",)


def test_a_link_leading_out_is_never_followed(
    tmp_path: Path, workspace: Path, store: CheckpointStore
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / "escape")
    checkpoint = store.snapshot()
    # src becomes a link to the outside folder: restoring src/app.py must not write there.
    shutil.rmtree(workspace / "src")
    os.symlink(outside, workspace / "src")

    store.restore(checkpoint.id)

    assert list(outside.iterdir()) == []
    assert (workspace / "src").is_dir() and not (workspace / "src").is_symlink()
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 1\n"
    assert os.readlink(workspace / "escape") == str(outside)


@pytest.mark.parametrize("over_budget", [False, True])
def test_a_folder_replaced_by_a_link_out_comes_back_and_nothing_outside_changes(
    tmp_path: Path, workspace: Path, store: CheckpointStore, over_budget: bool
) -> None:
    # The link leads to a folder holding files of the same names as the folder had: they
    # are outside, so they neither stand in the way nor get written.
    outside = tmp_path / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "app.py").write_text("outside's own\n")
    (outside / "pkg" / "util.py").write_text("outside's util\n")
    outside_before = state(outside)
    tracked = ["src/app.py", "src/pkg/util.py"]
    checkpoint = store.snapshot(only=tracked if over_budget else None)
    shutil.rmtree(workspace / "src")
    os.symlink(outside, workspace / "src")

    plan = store.restore(checkpoint.id, only=[*tracked, "src"] if over_budget else None)

    assert state(outside) == outside_before
    assert plan.restore == tracked and plan.delete == ["src"]
    assert not any(left.path.startswith("src") for left in plan.left)
    assert (workspace / "src").is_dir() and not (workspace / "src").is_symlink()
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 1\n"
    assert (workspace / "src" / "pkg" / "util.py").read_text() == "X = 1\nY = 2\n"


def test_an_untracked_file_in_the_way_of_a_folder_is_left_and_named(
    workspace: Path, store: CheckpointStore
) -> None:
    checkpoint_with_src = store.snapshot()
    (workspace / ".gitignore").write_text("src\n")  # ignored from now on
    shutil.rmtree(workspace / "src")
    (workspace / "src").write_text("an ignored file where the folder was\n")
    plan = store.restore(checkpoint_with_src.id)
    assert _reasons(plan.left)["src/app.py"] == "blocked"
    assert (workspace / "src").read_text() == "an ignored file where the folder was\n"


def test_content_is_stored_as_is_whatever_gitattributes_say(
    workspace: Path, store: CheckpointStore
) -> None:
    (workspace / ".gitattributes").write_text("* text eol=lf\n*.txt ident\n")
    (workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\n$Id$\r\n")
    checkpoint = store.snapshot()
    (workspace / "crlf.txt").write_bytes(b"changed\n")
    store.restore(checkpoint.id)
    assert (workspace / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n$Id$\r\n"


def test_the_users_git_config_and_environment_are_ignored(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ignore-all").write_text("*.py\n")
    marker = tmp_path / "hook-ran"
    (home / ".gitconfig").write_text(
        f"[core]\n\texcludesFile = {home / 'ignore-all'}\n\tautocrlf = true\n"
        f"\tfsmonitor = touch {marker}\n"
    )
    (workspace / "crlf.py").write_bytes(b"a\r\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "not-this"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "not-this-index"))
    with CheckpointStore(
        workspace, tmp_path / "store", max_file_bytes=4096, max_total_bytes=10**6
    ) as store:
        checkpoint = store.snapshot()
        (workspace / "crlf.py").write_bytes(b"b\n")
        store.restore(checkpoint.id)
    assert (workspace / "crlf.py").read_bytes() == b"a\r\n"  # not ignored, not converted
    assert not marker.exists()
    assert not (tmp_path / "not-this").exists() and not (tmp_path / "not-this-index").exists()


def test_only_mode_updates_the_named_paths_and_keeps_the_rest(
    workspace: Path, store: CheckpointStore
) -> None:
    # Over budget, the pod checkpoints before each round the files its tools will touch.
    turn_start = store.snapshot(only=[])
    assert turn_start.files == 0
    store.snapshot(only=["README.md"])  # before write_file README.md
    (workspace / "README.md").write_text("rewritten by the pod\n")
    store.snapshot(only=["made/by/pod.txt", str(workspace / "README.md")])  # absolute is fine
    (workspace / "made" / "by").mkdir(parents=True)
    (workspace / "made" / "by" / "pod.txt").write_text("new\n")
    (workspace / "src" / "app.py").write_text("changed by bash, never named\n")
    later = store.snapshot(only=["made/by/pod.txt", "README.md", "/elsewhere/x"])
    assert later.files == 2

    plan = store.restore(turn_start.id, only=[])

    assert (workspace / "README.md").read_text() == "# Project\n\nSome words.\n"
    assert not (workspace / "made").exists()
    assert (workspace / "src" / "app.py").read_text() == "changed by bash, never named\n"
    assert plan.restore == ["README.md"] and plan.delete == ["made/by/pod.txt"]


def test_only_mode_keeps_the_previous_entry_of_paths_not_named(
    workspace: Path, store: CheckpointStore
) -> None:
    first = store.snapshot(only=["README.md", "run.sh"])
    (workspace / "README.md").write_text("changed, but not named below\n")
    (workspace / "run.sh").unlink()
    second = store.snapshot(only=["run.sh"])
    assert second.files == 1
    (workspace / "README.md").write_text("changed again\n")
    # Restoring `second` brings README.md back as `first` held it: `second` kept that entry.
    store.restore(second.id, only=[])
    assert (workspace / "README.md").read_text() == "# Project\n\nSome words.\n"
    assert not (workspace / "run.sh").exists()
    store.restore(first.id, only=[])
    assert (workspace / "run.sh").read_text() == "#!/bin/sh\necho hi\n"


def test_restore_after_a_partial_restore_gives_exactly_the_target(
    workspace: Path, store: CheckpointStore
) -> None:
    target_state = state(workspace)
    checkpoint = store.snapshot()
    _mutate(workspace)
    plan = store.plan(checkpoint.id)
    # Half the work done by hand, as a killed restore would have left it.
    for path in plan.restore[::2]:
        kind = target_state[path]
        dest = workspace / path
        dest.unlink(missing_ok=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if kind[0] == "link":
            os.symlink(str(kind[1]), dest)
        else:
            dest.write_bytes(kind[1])  # type: ignore[arg-type]
            dest.chmod(0o755 if kind[2] else 0o644)
    for path in plan.delete[::2]:
        (workspace / path).unlink()
        with contextlib.suppress(OSError):  # the folders that left empty, as restore does
            os.removedirs((workspace / path).parent)

    store.restore(checkpoint.id)
    assert state(workspace) == target_state
    again = store.restore(checkpoint.id)
    assert state(workspace) == target_state
    assert (again.restore, again.delete) == ([], [])


def test_a_restore_killed_part_way_finishes_when_run_again(
    workspace: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    target_state = state(workspace)
    checkpoint = store.snapshot()
    _mutate(workspace)
    mutated = state(workspace)
    real_write = files_module.Workspace.write
    calls: list[str] = []

    class Killed(BaseException):
        pass

    def dying_write(self: files_module.Workspace, path: str, mode: str, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 3:
            # Killed after the temporary file is written, before the rename.
            with self.parents(path, create=True) as chain:
                parent, name = chain[-1]
                fd = os.open(
                    files_module.temp_name(name), os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=parent
                )
                os.write(fd, data[:1])
                os.close(fd)
            raise Killed
        real_write(self, path, mode, data)

    monkeypatch.setattr(files_module.Workspace, "write", dying_write)
    with pytest.raises(Killed):
        store.restore(checkpoint.id)
    monkeypatch.setattr(files_module.Workspace, "write", real_write)
    assert store.interrupted_restore() == checkpoint.id
    assert state(workspace) not in (target_state, mutated)  # a mix, as after kill -9

    plan = store.restore(checkpoint.id)

    assert state(workspace) == target_state  # no temporary file left either
    assert store.interrupted_restore() is None
    assert plan.before is not None
    store.restore(plan.before)  # the state before the first attempt, not the mix
    assert state(workspace) == mutated


def test_plan_says_what_restore_then_does(workspace: Path, store: CheckpointStore) -> None:
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "x.log").write_text("log\n")
    checkpoint = store.snapshot()
    _mutate(workspace)
    (workspace / "big.bin").write_bytes(b"\0" * (64 * 1024 + 1))
    chain_head = store.snapshot().id

    plan = store.plan(checkpoint.id)
    assert store.snapshot().id == chain_head  # a plan changes neither files nor the chain
    done = store.restore(checkpoint.id)

    assert (plan.restore, plan.delete, plan.left) == (done.restore, done.delete, done.left)
    assert plan.diffstat == done.diffstat
    assert plan.before is None and done.before == chain_head
    stats = {s.path: s for s in plan.diffstat}
    assert stats["data.bin"].binary and stats["data.bin"].insertions is None
    readme = stats["README.md"]
    assert (readme.insertions, readme.deletions) == (1, 2)
    assert (stats["notes.txt"].insertions, stats["notes.txt"].deletions) == (0, 1)
    assert set(stats) == set(plan.restore) | set(plan.delete)
    assert plan.to_json()["left"][0] == {
        "path": "big.bin",
        "reason": "too_large",
        "detail": plan.left[0].detail,
    }


@pytest.mark.parametrize(
    "bad", ["0" * 40, "HEAD", "--help", "abc", "refs/heads/checkpoints", "f" * 64]
)
def test_an_unknown_checkpoint_id_is_a_typed_error_naming_it(
    store: CheckpointStore, bad: str
) -> None:
    store.snapshot()
    for call in (store.plan, store.restore):
        with pytest.raises(UnknownCheckpointError, match=bad) as caught:
            call(bad)
        assert caught.value.checkpoint_id == bad


def test_a_damaged_checkpoint_is_named_before_anything_changes(
    tmp_path: Path, workspace: Path, store: CheckpointStore
) -> None:
    checkpoint = store.snapshot()
    (workspace / "README.md").write_text("changed\n")
    objects = tmp_path / "state" / "s.checkpoints" / "objects"
    content = b"# Project\n\nSome words.\n"
    old_blob = hashlib.sha1(b"blob %d\0%s" % (len(content), content)).hexdigest()
    (objects / old_blob[:2] / old_blob[2:]).unlink()

    with pytest.raises(UnknownCheckpointError, match=checkpoint.id):
        store.restore(checkpoint.id)
    assert (workspace / "README.md").read_text() == "changed\n"


def test_a_restore_that_cannot_write_names_the_file(
    workspace: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = store.snapshot()
    (workspace / "src" / "app.py").write_text("changed\n")

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files_module.os, "rename", full_disk)
    with pytest.raises(RestoreError, match=r"'src/app\.py'.*No space left") as caught:
        store.restore(checkpoint.id)
    assert caught.value.path == "src/app.py"
    assert store.interrupted_restore() == checkpoint.id
    monkeypatch.undo()
    store.restore(checkpoint.id)
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 1\n"


def test_no_git_is_a_clear_error(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(GitUnavailableError, match="checkpoints = false"):
        CheckpointStore(workspace, tmp_path / "g", max_file_bytes=1, max_total_bytes=1)


def test_a_store_inside_the_workspace_does_not_snapshot_itself(workspace: Path) -> None:
    with CheckpointStore(
        workspace, workspace / ".cache-ckpt", max_file_bytes=10**6, max_total_bytes=10**7
    ) as inside:
        first = inside.snapshot()
        assert inside.snapshot().id == first.id
        assert first.files == 6


def test_loose_objects_are_packed_and_checkpoints_still_restore(
    workspace: Path, store: CheckpointStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.capabilities.checkpoints import snapshot as snapshot_module

    monkeypatch.setattr(snapshot_module, "PACK_AFTER_OBJECTS", 10)
    first_state = state(workspace)
    first = store.snapshot()
    for i in range(5):
        (workspace / f"file{i}.txt").write_text(f"{i}\n")
        store.snapshot()
    packs = list((store.git_dir / "objects" / "pack").glob("*.pack"))
    loose = [p for p in (store.git_dir / "objects").glob("??/*")]
    assert packs and len(loose) < 10
    store.restore(first.id)
    assert state(workspace) == first_state


def test_the_pods_own_folder_is_not_checkpointed(workspace: Path, store: CheckpointStore) -> None:
    (workspace / ".pod").mkdir()
    (workspace / ".pod" / "config.toml").write_text('model = "a"\n')
    checkpoint = store.snapshot()
    (workspace / ".pod" / "config.toml").write_text('model = "b"\n')
    store.restore(checkpoint.id)
    assert (workspace / ".pod" / "config.toml").read_text() == 'model = "b"\n'
    assert checkpoint.files == 6


def test_only_mode_follows_a_link_to_a_folder_inside_but_not_out(
    tmp_path: Path, workspace: Path, store: CheckpointStore
) -> None:
    os.symlink("src", workspace / "src-link")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.txt").write_text("outside\n")
    os.symlink(outside, workspace / "out-link")
    first = store.snapshot(only=["src-link/app.py", "out-link/o.txt"])
    assert first.files == 1  # src/app.py, where the link leads; nothing outside
    (workspace / "src" / "app.py").write_text("changed through the link\n")
    store.restore(first.id, only=[])
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 1\n"


def test_odd_file_names_survive_the_round_trip(workspace: Path, store: CheckpointStore) -> None:
    names = ["with space.txt", "new\nline.txt", "accentué.md", os.fsdecode(b"latin1-\xe9.txt")]
    for name in names:
        (workspace / name).write_bytes(os.fsencode(name))
    target = state(workspace)
    checkpoint = store.snapshot()
    for name in names[:2]:
        (workspace / name).unlink()
    for name in names[2:]:
        (workspace / name).write_text("changed")
    plan = store.restore(checkpoint.id)
    assert sorted(plan.restore) == sorted(names)
    assert state(workspace) == target


def test_a_workspace_that_is_gone_is_a_checkpoint_error(
    tmp_path: Path, workspace: Path, store: CheckpointStore
) -> None:
    checkpoint = store.snapshot()
    shutil.rmtree(workspace)
    with pytest.raises(CheckpointError):
        store.restore(checkpoint.id)
