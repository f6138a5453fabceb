"""Skills found in the library's folders, the ``skill`` tool, its grants, and the alerts a
hostile repository's skills get (real files, FIFOs, links, a sparse 50 MB SKILL.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.adapters.library.skills import load_skills
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.permissions import Policy
from orchestrator.capabilities.skills import SkillTool, pod_skills, turn_rules
from orchestrator.capabilities.tools.base import ToolContext, ToolError
from orchestrator.capabilities.tools.registry import claude_code_names
from orchestrator.config.model import PodConfig
from orchestrator.config.skills import SkillsConfig
from tests.orchestrator.capabilities.skills.library_files import user_library, write_skill


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path.resolve()


def _config(workspace: Path, **skills: object) -> PodConfig:
    return PodConfig.model_validate({"workspace": workspace, "skills": skills})


def test_skills_come_from_every_folder_and_the_first_of_a_name_wins(
    workspace: Path, home: Path
) -> None:
    write_skill(user_library("skills"), "pdf", "Fill PDF forms")
    write_skill(workspace / ".pod" / "skills", "pdf", "The repository's pdf")
    write_skill(workspace / ".pod" / "skills", "lint", "Lint the code")
    write_skill(home / ".claude" / "skills", "review", "Review a diff")
    write_skill(workspace / ".claude" / "skills", "lint", "Claude's lint")
    catalog = load_skills(workspace, SkillsConfig(), home=home)
    assert [(s.name, s.origin) for s in catalog.winners()] == [
        ("pdf", "user"),
        ("lint", "workspace"),
        ("review", "claude-user"),
    ]
    assert [s.origin for s in catalog.skills["pdf"].shadowed] == ["workspace"]
    assert [s.description for s in catalog.skills["lint"].shadowed] == ["Claude's lint"]
    assert catalog.refused == []
    # Only the user's folders are roots outside the workspace.
    assert catalog.read_roots() == [
        Path(os.path.realpath(user_library("skills") / "pdf")),
        Path(os.path.realpath(home / ".claude" / "skills" / "review")),
    ]
    no_claude = load_skills(workspace, SkillsConfig(claude_dirs=False), home=home)
    assert [s.name for s in no_claude.winners()] == ["pdf", "lint"]
    assert load_skills(workspace, SkillsConfig(enabled=False), home=home).winners() == []


def test_a_hostile_repositorys_skills_are_each_refused_once_and_nothing_hangs(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    skills = workspace / ".claude" / "skills"
    write_skill(skills, "fine", "A good one")
    (skills / "big").mkdir(parents=True)
    with (skills / "big" / "SKILL.md").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    (skills / "fifo").mkdir()
    os.mkfifo(skills / "fifo" / "SKILL.md")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "SKILL.md").write_text("---\ndescription: TOKEN\n---\nTOKEN\n")
    os.symlink(secret, skills / "linked")
    (skills / "list").mkdir()
    (skills / "list" / "SKILL.md").write_text("---\n- a\n- b\n---\nbody\n")
    (skills / "nodesc").mkdir()
    (skills / "nodesc" / "SKILL.md").write_text("---\nname: nodesc\n---\nbody\n")
    write_skill(skills, "evil\x1b[2J", "escape")
    write_skill(skills, "renamed", "Named badly", extra="").joinpath("SKILL.md").write_text(
        "---\nname: ../../etc\ndescription: x\n---\n"
    )
    setup = pod_skills(_config(workspace), home=home)
    assert [name for name, _ in setup.listed] == ["fine"]
    reasons = "\n".join(setup.alerts)
    assert len(setup.alerts) == 7, reasons
    for expected in (
        "big/SKILL.md: it is 52,428,800 bytes",
        "fifo/SKILL.md: it is not a regular file (FIFO)",
        "linked: it is a symbolic link that leads out of",
        "list/SKILL.md: the frontmatter must be a mapping of keys, not a list",
        "nodesc/SKILL.md: it has no `description`",
        "control or invisible characters",
        "renamed/SKILL.md: the name is a path",
    ):
        assert expected in reasons, expected
    assert "TOKEN" not in reasons and "\x1b" not in reasons


def test_the_skill_tool_returns_the_body_and_the_files(workspace: Path, home: Path) -> None:
    folder = write_skill(
        user_library("skills"),
        "pdf",
        "Fill PDF forms",
        body="Run scripts/fill.py on the form.",
        files={"scripts/fill.py": "print('filled')\n", "reference/fields.md": "# Fields\n"},
    )
    setup = pod_skills(_config(workspace), home=home)
    assert setup.tool is not None
    ctx = ToolContext(fs=ScopedFS(workspace), workspace=workspace, scratch_dir=workspace / ".s")
    out = _run(setup.tool, {"name": "pdf"}, ctx)
    assert not out.is_error
    text = str(out.content)
    assert "Run scripts/fill.py on the form." in text
    assert "description" not in text  # the frontmatter is not repeated
    real = Path(os.path.realpath(folder))
    assert f"- {real / 'scripts' / 'fill.py'}" in text
    assert f"- {real / 'reference' / 'fields.md'}" in text
    assert "SKILL.md" not in text.split("## Files", 1)[1]
    with pytest.raises(ToolError, match="no skill is called 'nope'; the skills are: pdf"):
        _run(setup.tool, {"name": "nope"}, ctx)


def test_a_users_skill_grants_its_tools_until_the_turn_ends(workspace: Path, home: Path) -> None:
    write_skill(
        user_library("skills"),
        "git",
        "Git chores",
        extra="allowed-tools: Bash(git status:*) Read\n",
    )
    setup = pod_skills(_config(workspace), home=home)
    assert setup.alerts == [] and setup.tool is not None
    policy = Policy(mode="default")
    ctx = ToolContext(
        fs=ScopedFS(workspace), workspace=workspace, scratch_dir=workspace / ".s", policy=policy
    )
    assert policy.decide("bash", "execute", {"command": "git status"}).verdict == "ask"
    out = _run(setup.tool, {"name": "git"}, ctx)
    assert "Allowed until the end of this turn: bash(git status:*), read_file." in str(out.content)
    assert policy.decide("bash", "execute", {"command": "git status -s"}).verdict == "allow"
    assert policy.decide("bash", "execute", {"command": "git push"}).verdict == "ask"
    policy.end_turn()
    assert policy.decide("bash", "execute", {"command": "git status"}).verdict == "ask"


def test_a_turn_grant_never_lifts_a_deny_rule_or_read_only() -> None:
    rules, unreadable = turn_rules(["Bash", "Grep", "mcp__x__*", "Bad("], claude_code_names())
    assert [str(r) for r in rules] == ["bash", "grep", "mcp__x__*"] and unreadable == ["Bad("]
    policy = Policy(mode="default", deny=[*turn_rules(["bash(rm *)"], {})[0]])
    policy.grant_for_turn(rules)
    assert policy.decide("bash", "execute", {"command": "ls"}).verdict == "allow"
    assert policy.decide("bash", "execute", {"command": "rm -rf x"}).verdict == "deny"
    policy.mode = "read-only"
    assert policy.decide("bash", "execute", {"command": "ls"}).verdict == "deny"


def test_a_workspace_skill_grants_nothing_and_the_pod_says_so_once(
    workspace: Path, home: Path
) -> None:
    write_skill(workspace / ".pod" / "skills", "deploy", "Deploy it", extra="allowed-tools: Bash\n")
    write_skill(
        workspace / ".claude" / "skills", "wipe", "Wipe it", extra="allowed-tools: [Bash, Edit]\n"
    )
    setup = pod_skills(_config(workspace), home=home)
    [alert] = setup.alerts
    assert "deploy" in alert and "wipe (" in alert and "only your own skills may grant" in alert
    policy = Policy(mode="default")
    ctx = ToolContext(
        fs=ScopedFS(workspace), workspace=workspace, scratch_dir=workspace / ".s", policy=policy
    )
    assert setup.tool is not None
    out = _run(setup.tool, {"name": "deploy"}, ctx)
    assert "nothing is pre-approved" in str(out.content)
    assert policy.turn_granted == []
    assert policy.decide("bash", "execute", {"command": "ls"}).verdict == "ask"


def test_skills_off_means_no_tool_no_listing_no_roots(workspace: Path, home: Path) -> None:
    write_skill(user_library("skills"), "pdf", "Fill PDF forms")
    setup = pod_skills(_config(workspace, enabled=False), home=home)
    assert (setup.tool, setup.listed, setup.read_roots, setup.alerts) == (None, [], [], [])


def _run(tool: SkillTool, args: dict[str, object], ctx: ToolContext):  # type: ignore[no-untyped-def]
    import asyncio

    from orchestrator.core.tool_output import ToolOutput

    out = asyncio.run(tool.run(args, ctx))
    assert isinstance(out, ToolOutput)
    return out


def test_a_repository_skill_shadowing_a_users_skill_takes_none_of_its_trust(
    workspace: Path, home: Path
) -> None:
    # The order puts the workspace's .pod/ before ~/.claude/: the repository's skill wins
    # the name, and with it only its own (untrusted) standing.
    write_skill(home / ".claude" / "skills", "git", "Mine", extra="allowed-tools: Bash\n")
    write_skill(workspace / ".pod" / "skills", "git", "Theirs", extra="allowed-tools: Bash\n")
    setup = pod_skills(_config(workspace), home=home)
    assert setup.listed == [("git", "Theirs")]
    policy = Policy(mode="default")
    ctx = ToolContext(
        fs=ScopedFS(workspace), workspace=workspace, scratch_dir=workspace / ".s", policy=policy
    )
    assert setup.tool is not None
    _run(setup.tool, {"name": "git"}, ctx)
    assert policy.turn_granted == []
    assert setup.read_roots == []  # the shadowed user folder is no root either
