"""Command files read from the library folders into the catalog, and what a hostile
repository's command file can (not) do: size, FIFOs, links out, names and descriptions with
control characters, @ cycles, arguments that try to inject."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.config.model import PodConfig
from orchestrator.config.skills import SkillsConfig
from orchestrator.core.command_text import Invocation
from orchestrator.core.segments import FileRefSegment, PasteSegment, Segment, TextSegment
from orchestrator.runtime.command_files import load_command_files
from orchestrator.runtime.custom_commands import (
    CommandCatalog,
    CommandSpec,
    expand_invocation,
    find_invocation,
)
from orchestrator.runtime.submit import resolve_submission


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_first_name_wins_and_the_rest_are_shadowed(ws: Path, home: Path) -> None:
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "commands"
    write(user, "review.md", "---\ndescription: mine\n---\nUser review")
    write(ws / ".pod" / "commands", "review.md", "Workspace review")
    write(ws / ".claude" / "commands" / "frontend", "lint.md", "# Lint the UI\nbody")
    write(home / ".claude" / "commands", "review.md", "Claude review")
    files = load_command_files(ws, SkillsConfig(), home=home)
    catalog = files.catalog
    review = catalog.find("review")
    assert review is not None and review.source == "user" and review.trusted
    assert review.body == "User review" and review.description == "mine"
    lint = catalog.find("lint")
    assert lint is not None and lint.description == "Lint the UI (frontend)"
    assert not lint.trusted
    listing = catalog.listing().commands
    assert [(c.name, c.source, c.shadowed_by) for c in listing] == [
        ("review", "user", None),
        ("lint", "claude-workspace", None),
        ("review", "workspace", "user"),
        ("review", "claude-user", "user"),
    ]
    assert files.refused == []


def test_claude_dirs_off_reads_only_the_pods_folders(ws: Path, home: Path) -> None:
    write(ws / ".claude" / "commands", "x.md", "x")
    catalog = load_command_files(ws, SkillsConfig(claude_dirs=False), home=home).catalog
    assert catalog.find("x") is None


def test_hostile_files_are_refused_each_with_a_reason(ws: Path, home: Path) -> None:
    folder = ws / ".pod" / "commands"
    write(folder, "ok.md", "fine")
    with open(folder / "huge.md", "wb") as big:  # sparse: 50 MB without the disk
        big.truncate(50 * 1024 * 1024)
    os.mkfifo(folder / "fifo.md")
    secret = ws.parent / "secret.txt"
    secret.write_text("the key")
    os.symlink(secret, folder / "leak.md")
    write(folder, "re\x1b[2Jview.md", "escape in the name")
    write(folder, "bad-yaml.md", "---\n- a list\n---\nbody")
    write(folder, "evil.md", '---\ndescription: "Hi\\x1b]0;pwned\\x07 \\u202e there"\n---\nb')
    files = load_command_files(ws, SkillsConfig(), home=home)
    names = [spec.name for spec in files.catalog.files]
    assert names == ["evil", "ok"]
    evil = files.catalog.find("evil")
    assert evil is not None and "\x1b" not in evil.description and "\u202e" not in evil.description
    said = "\n".join(files.refused)
    assert "huge.md" in said and "more than" in said
    assert "fifo.md" in said and "leak.md" in said
    assert "bad-yaml.md" in said and "mapping" in said
    assert "\\x1b" in said  # the refused name is shown escaped, never raw
    assert "the key" not in said
    assert all("\x1b" not in line for line in files.refused)


def spec(body: str) -> CommandSpec:
    return CommandSpec(name="c", source="workspace", body=body)


def test_arguments_inject_neither_refs_nor_commands(ws: Path) -> None:
    (ws / "a.md").write_text("A")
    hostile = "!`touch pwned` @../../etc/passwd @a.md"
    expansion = expand_invocation(
        spec("Look: $ARGUMENTS"),
        Invocation("c", hostile),
        [],
        exists=lambda path: True,
        bash_available=True,
    )
    assert expansion.steps == []
    assert not [s for s in expansion.body if isinstance(s, FileRefSegment)]
    assert PasteSegment(id="arguments", text=hostile) in expansion.body


def test_refs_in_the_body_resolve_once_and_never_follow_refs_inside_files(ws: Path) -> None:
    # a.md names b.md, which names a.md: attached files are not searched for refs.
    (ws / "a.md").write_text("see @b.md")
    (ws / "b.md").write_text("see @a.md")
    fs = ScopedFS(ws)
    expansion = expand_invocation(
        spec("Read @a.md and @a.md and @../outside.md"),
        Invocation("c", ""),
        [],
        exists=fs.exists,
        bash_available=False,
    )
    config = PodConfig(workspace=ws, provider="scripted")
    submission = resolve_submission(expansion.body, fs=fs, config=config)
    assert len(submission.attach) == 1
    assert "see @b.md" in str(submission.attach[0])
    assert any("outside.md" in alert.message for alert in submission.alerts)


def test_a_line_without_bash_is_left_unrun_and_said_so(ws: Path) -> None:
    expansion = expand_invocation(
        spec("x !`rm -rf ~` y"),
        Invocation("c", ""),
        [],
        exists=lambda p: False,
        bash_available=False,
    )
    assert expansion.steps == []
    text = "".join(s.text for s in expansion.body if isinstance(s, TextSegment | PasteSegment))
    assert text == "x [command not run: rm -rf ~ — bash is not enabled in this pod] y"


def test_an_invocation_needs_a_known_name_unless_it_is_a_segment() -> None:
    catalog = CommandCatalog(files=[spec("b")])
    found = find_invocation([TextSegment(text="/c  a b")], catalog)
    assert found is not None and found[1] == Invocation("c", "a b")
    assert find_invocation([TextSegment(text="/d a")], catalog) is None
    assert find_invocation([TextSegment(text="//c a")], catalog) is None
    typed: list[Segment] = [TextSegment(text="/c see "), FileRefSegment(path="x.py")]
    found = find_invocation(typed, catalog)
    assert found is not None and found[1].arguments == "see @x.py"
    assert found[2] == [FileRefSegment(path="x.py")]


def test_a_deep_wide_tree_is_walked_within_bounds(ws: Path, home: Path) -> None:
    folder = ws / ".pod" / "commands"
    for top in range(15):
        for inner in range(15):
            write(folder / f"d{top:02}" / f"e{inner:02}", "x.md", "x")
    write(folder / "a" / "b" / "c" / "d", "deep.md", "too deep")
    files = load_command_files(ws, SkillsConfig(), home=home)
    assert files.catalog.find("deep") is None  # past MAX_DEPTH
    assert any("more than 200 sub-folders" in line for line in files.refused)
    assert sum("sub-folders" in line for line in files.refused) == 1
