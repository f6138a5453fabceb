"""``[hooks]`` as Claude Code's settings shape it: matchers, commands, validation."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.capabilities.hooks import HookEvent
from orchestrator.config.hooks import HooksConfig

TOML = """
[[hooks.PreToolUse]]
matcher = "bash"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "~/.config/pod/hooks/no-rm.sh"
timeout = 30

[[hooks.PreToolUse]]
matcher = "Edit|Write"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "format-check"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "~/.config/pod/hooks/no-rm.sh"

[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "notify-send done"
"""


def config() -> HooksConfig:
    return HooksConfig.model_validate(tomllib.loads(TOML)["hooks"])


def test_the_issue_example_loads_and_matches_by_either_name() -> None:
    hooks = config()
    bash = hooks.commands(HookEvent.PRE_TOOL_USE, "bash", "Bash")
    assert [h.command for h in bash] == ["~/.config/pod/hooks/no-rm.sh"]
    assert bash[0].timeout == 30
    edits = hooks.commands(HookEvent.PRE_TOOL_USE, "edit_file", "Edit")
    assert [h.command for h in edits] == ["format-check", "~/.config/pod/hooks/no-rm.sh"]
    assert hooks.commands(HookEvent.PRE_TOOL_USE, "read_file", "Read") == []
    # A matcher is a whole-name match: "bash" does not match "bash_helper".
    assert hooks.commands(HookEvent.PRE_TOOL_USE, "bash_helper") == []
    assert [h.command for h in hooks.commands(HookEvent.STOP)] == ["notify-send done"]


def test_the_same_command_under_two_matchers_runs_once() -> None:
    hooks = config()
    everything = hooks.commands(HookEvent.PRE_TOOL_USE, None)
    assert [h.command for h in everything] == ["~/.config/pod/hooks/no-rm.sh", "format-check"]


def test_a_hooks_own_failure_does_not_block_unless_it_says_so() -> None:
    # As in Claude Code: a hook that did not work is reported, and the call goes on.
    hooks = config()
    hook = hooks.commands(HookEvent.PRE_TOOL_USE, "bash")[0]
    assert hook.failure(HookEvent.PRE_TOOL_USE) == "continue"
    assert hook.failure(HookEvent.POST_TOOL_USE) == "continue"
    strict = hook.model_copy(update={"on_failure": "block"})
    assert strict.failure(HookEvent.PRE_TOOL_USE) == "block"
    assert len(hooks.configured()) == 4


def test_where_a_hook_runs_is_unset_by_default() -> None:
    # Unset: outside the sandbox, unless it runs a workspace file (the runner decides).
    assert config().commands(HookEvent.STOP)[0].sandbox is None


@pytest.mark.parametrize(
    "bad",
    [
        {"PreToolUse": [{"matcher": "(", "hooks": [{"command": "x"}]}]},
        {"PreToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]},
        {"PreToolUse": [{"hooks": [{"command": ""}]}]},
        {"PreToolUse": [{"hooks": [{"command": "x", "timeout": 0}]}]},
        {"SessionEnd": []},
    ],
)
def test_mistakes_are_named(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        HooksConfig.model_validate(bad)


def test_the_documented_example_loads() -> None:
    doc = Path(__file__).resolve().parents[3] / "docs" / "hooks.md"
    block = doc.read_text(encoding="utf-8").split("```toml\n", 1)[1].split("```", 1)[0]
    hooks = HooksConfig.model_validate(tomllib.loads(block)["hooks"])
    assert [event for event, _, _ in hooks.configured()] == ["PreToolUse", "PostToolUse", "Stop"]
    assert hooks.commands(HookEvent.POST_TOOL_USE, "write_file", "Write")


def test_the_documented_script_paths_follow_xdg_config_home(tmp_path: Path) -> None:
    # A hook gets XDG_CONFIG_HOME (the pod passes it on): the documented spelling finds the
    # hooks folder wherever the user moved the config, and ~/.config without the variable.
    doc = Path(__file__).resolve().parents[3] / "docs" / "hooks.md"
    block = doc.read_text(encoding="utf-8").split("```toml\n", 1)[1].split("```", 1)[0]
    hooks = HooksConfig.model_validate(tomllib.loads(block)["hooks"])
    scripts = [h.command for _, _, h in hooks.configured() if "pod/hooks" in h.command]
    assert len(scripts) == 2
    home, moved = tmp_path / "home", tmp_path / "elsewhere"
    for env, folder in [
        ({"HOME": str(home), "XDG_CONFIG_HOME": str(moved)}, moved / "pod" / "hooks"),
        ({"HOME": str(home)}, home / ".config" / "pod" / "hooks"),
    ]:
        for command in scripts:
            said = subprocess.run(
                ["/bin/bash", "-c", f"printf %s {command}"],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            assert Path(said.stdout).parent == folder, (env, command)
