"""What a command planted: the pure difference of two snapshots, and its words."""

from __future__ import annotations

import hashlib

from orchestrator.adapters.sandbox.planted import (
    Fingerprint,
    RootSnapshot,
    Snapshot,
    command_keys,
    describe,
    plant_diff,
    planted,
)


def _file(data: bytes, *, ino: int = 1, mtime: int = 1, mode: int = 0o644) -> Fingerprint:
    return Fingerprint(
        "file", ino=ino, size=len(data), mtime_ns=mtime, mode=mode,
        digest=hashlib.sha256(data).hexdigest(), data=data,
    )  # fmt: skip


def _dir(ino: int = 10) -> Fingerprint:
    return Fingerprint("dir", ino=ino, dev=1)


def _snap(*roots: RootSnapshot, complete: bool = True) -> Snapshot:
    return Snapshot({r.path: r for r in roots}, complete)


FSMONITOR = b"[core]\n\tbare = false\n\tfsmonitor = touch /x; true\n"


def test_nothing_changed_is_nothing_planted() -> None:
    root = RootSnapshot(".git", _dir(), {"config": _file(b"[core]\n")})
    assert planted(_snap(root), _snap(root)) == []


def test_a_new_git_dir_is_created_and_its_fsmonitor_named() -> None:
    git = RootSnapshot(".git", _dir(), {"config": _file(FSMONITOR), "HEAD": _file(b"ref")})
    plants = planted(_snap(), _snap(git))
    assert [(p.path, p.change, p.whole) for p in plants] == [(".git", "created", True)]
    text = describe(plants)
    assert ".git (created)" in text
    assert "core.fsmonitor in .git/config" in text
    diff = plant_diff(plants)
    assert diff is not None and "+\tfsmonitor = touch /x; true" in diff


def test_an_empty_new_folder_configures_nothing() -> None:
    assert planted(_snap(), _snap(RootSnapshot(".pod", _dir()))) == []
    incomplete = RootSnapshot(".pod", _dir(), complete=False)
    assert [p.change for p in planted(_snap(), _snap(incomplete))] == ["created"]


def test_a_folder_renamed_away_and_made_again_is_replaced() -> None:
    was = RootSnapshot(".pod", _dir(10), {"config.toml": _file(b"a")})
    now = RootSnapshot(".pod", _dir(11), {"config.toml": _file(b"mode = 'yolo'")})
    (plant,) = planted(_snap(was), _snap(now))
    assert (plant.change, plant.whole, plant.before_root) == ("replaced", True, was)
    assert [f[0] for f in plant.files()] == [".pod/config.toml"]


def test_a_folder_gone_is_removed_only_when_the_walk_was_complete() -> None:
    was = RootSnapshot(".pod", _dir(), {"config.toml": _file(b"a")})
    assert [p.change for p in planted(_snap(was), _snap())] == ["removed"]
    assert planted(_snap(was), _snap(complete=False)) == []


def test_files_inside_a_kept_folder_are_compared_one_by_one() -> None:
    was = RootSnapshot(
        ".git", _dir(), {"config": _file(b"[core]\n"), "hooks/post-checkout": _file(b"#!")}
    )
    now = RootSnapshot(
        ".git",
        _dir(),
        {"config": _file(FSMONITOR, ino=2), "hooks/pre-commit": _file(b"#!/bin/sh\n")},
    )
    plants = planted(_snap(was), _snap(now))
    assert [(p.path, p.change, p.whole) for p in plants] == [
        (".git/config", "changed", False),
        (".git/hooks/post-checkout", "removed", False),
        (".git/hooks/pre-commit", "created", False),
    ]


def test_same_bytes_rewritten_is_no_change_but_an_exec_bit_is() -> None:
    was = RootSnapshot(".git", _dir(), {"hooks/pre-push": _file(b"#!", ino=1, mtime=1)})
    same = RootSnapshot(".git", _dir(), {"hooks/pre-push": _file(b"#!", ino=2, mtime=9)})
    runs = RootSnapshot(".git", _dir(), {"hooks/pre-push": _file(b"#!", mode=0o755)})
    assert planted(_snap(was), _snap(same)) == []
    assert [p.change for p in planted(_snap(was), _snap(runs))] == ["changed"]


def test_a_large_file_is_compared_by_lstat() -> None:
    big = Fingerprint("file", ino=1, size=10**7, mtime_ns=5, mode=0o644)
    assert big.same_as(Fingerprint("file", ino=1, size=10**7, mtime_ns=5, mode=0o644))
    assert not big.same_as(Fingerprint("file", ino=1, size=10**7, mtime_ns=6, mode=0o644))


def test_a_git_file_repointed_is_changed_and_shown() -> None:
    was = RootSnapshot("sub/.git", _file(b"gitdir: ../.git/modules/sub\n"))
    now = RootSnapshot("sub/.git", _file(b"gitdir: /elsewhere/planted\n", ino=3))
    (plant,) = planted(_snap(was), _snap(now))
    assert (plant.path, plant.change, plant.whole) == ("sub/.git", "changed", True)
    diff = plant_diff([plant])
    assert diff is not None
    assert "-gitdir: ../.git/modules/sub" in diff and "+gitdir: /elsewhere/planted" in diff


def test_a_symlink_retargeted_is_changed() -> None:
    was = RootSnapshot(".envrc", Fingerprint("link", data=b"env.sh"))
    now = RootSnapshot(".envrc", Fingerprint("link", data=b"/home/u/evil.sh"))
    assert [p.change for p in planted(_snap(was), _snap(now))] == ["changed"]
    a_file = RootSnapshot(".envrc", _file(b"export A=1\n"))
    assert [p.change for p in planted(_snap(was), _snap(a_file))] == ["replaced"]


def test_command_keys_of_a_git_config() -> None:
    text = """
[core]
\tbare = false
\tfsmonitor = touch /x
\thooksPath = .githooks
[user]
\tname = u
[alias]
\tst = !sh -c 'id'
[filter "lfs"]
\tclean = git-lfs clean -- %f
\trequired = true
[remote "origin"]
\turl = https://example.com/r.git
[core] pager = less
"""
    assert command_keys(text) == [
        "core.fsmonitor",
        "core.hookspath",
        "alias.st",
        "filter.lfs.clean",
        "core.pager",
    ]


def test_the_diff_leaves_out_samples_and_is_bounded() -> None:
    files = {"hooks/pre-commit.sample": _file(b"sample\n"), "config": _file(b"x\n" * 5000)}
    (plant,) = planted(_snap(), _snap(RootSnapshot(".git", _dir(), files)))
    diff = plant_diff([plant], limit=500)
    assert diff is not None
    assert "sample" not in diff
    assert diff.endswith("more characters of the diff]\n")
    assert plant_diff([]) is None
