"""``pod skills ls`` and ``pod agents ls``: the skills and agent files a pod here would use,
where each comes from, and which it shadows (docs/skills.md).

Both read the library's folders as ``pod serve`` in the workspace would (its config decides
``[skills]``); a refused file is listed with why. The text is also the TUI's ``/skills``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.options import workspace_config, workspace_option

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig

__all__ = ["agent_rows", "register", "skill_rows", "skills_text"]


def skill_rows(config: PodConfig) -> tuple[list[dict[str, Any]], list[str], bool]:
    """(one row per skill found, shadowed ones included; the refusals; whether skills are
    on) for a workspace's config."""
    from orchestrator.adapters.library.skills import load_skills

    catalog = load_skills(config.workspace, config.skills)
    rows: list[dict[str, Any]] = []
    for name, found in catalog.skills.items():
        for skill in [found.item, *found.shadowed]:
            rows.append(
                {
                    "name": name,
                    "description": skill.description,
                    "source": skill.origin,
                    "path": str(skill.skill_md),
                    "allowed_tools": list(skill.allowed_tools),
                    "shadowed_by": None if skill is found.item else str(found.item.skill_md),
                }
            )
    return rows, [str(refused) for refused in catalog.refused], config.skills.enabled


def agent_rows(config: PodConfig) -> tuple[list[dict[str, Any]], list[str]]:
    """(one row per agent: the config's ``[agents.*]`` and the agent files, shadowed ones
    included; the refusals) for a workspace's config."""
    from orchestrator.adapters.library.agents import load_agent_files

    catalog = load_agent_files(config.workspace, config.skills)
    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "description": agent.description,
            "source": "config",
            "path": None,
            "tools": agent.tools,
            "model": agent.model,
            "shadowed_by": None,
        }
        for name, agent in config.agents.items()
    ]
    for name, found in catalog.agents.items():
        winner = "[agents] in the config" if name in config.agents else str(found.item.path)
        for agent in [found.item, *found.shadowed]:
            used = agent is found.item and name not in config.agents
            rows.append(
                {
                    "name": name,
                    "description": agent.description,
                    "source": agent.origin,
                    "path": str(agent.path),
                    "tools": list(agent.tools) if agent.tools is not None else None,
                    "model": agent.model,
                    "shadowed_by": None if used else winner,
                }
            )
    return rows, [str(refused) for refused in catalog.refused]


def _lines(rows: list[dict[str, Any]], refused: list[str], what: str) -> list[str]:
    if not rows:
        lines = [f"No {what} found."]
    else:
        lines = []
        for row in rows:
            where = row["path"] or "config"
            head = f"{row['name']}  [{row['source']}]  {row['description']}"
            if row["shadowed_by"]:
                head += f"  (shadowed by {row['shadowed_by']})"
            lines += [head, f"    {where}"]
    lines += [f"refused: {reason}" for reason in refused]
    return lines


def skills_text(workspace: Path) -> str:
    """The skills of ``workspace`` as ``pod skills ls`` prints them, for the TUI's
    ``/skills`` (a config error is said in the text, never printed behind the UI)."""
    from cli.terminal_text import visible
    from orchestrator.config.loading import ConfigError, load_config

    try:
        config = load_config(workspace)
    except ConfigError as exc:
        return visible(f"No skills listed: {exc}")
    rows, refused, enabled = skill_rows(config)
    if not enabled:
        return "Skills are off ([skills] enabled = false)."
    return visible("\n".join(_lines(rows, refused, "skills")))


def _print(rows: list[dict[str, Any]], refused: list[str], as_json: bool, what: str) -> None:
    from cli.terminal_text import visible, visible_json

    if as_json:
        report = {what: rows, "refused": refused}
        typer.echo(visible_json(json.dumps(report, indent=2, ensure_ascii=False)))
    else:
        typer.echo(visible("\n".join(_lines(rows, refused, what))))


_WORKSPACE = workspace_option(
    "The pod workspace; its config decides [skills].", "--workspace", "-w"
)
_JSON = typer.Option("--json", help="Print them as JSON.")


def skills_ls(
    workspace: Annotated[Path, _WORKSPACE] = Path("."),
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """List the skills: name, description, where it comes from, what shadows it."""
    rows, refused, enabled = skill_rows(workspace_config(workspace))
    if not enabled and not as_json:
        typer.echo("Skills are off ([skills] enabled = false).")
        return
    _print(rows if enabled else [], refused, as_json, "skills")


def agents_ls(
    workspace: Annotated[Path, _WORKSPACE] = Path("."),
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """List the task agents: the config's [agents.*] and the agent files."""
    rows, refused = agent_rows(workspace_config(workspace))
    _print(rows, refused, as_json, "agents")


def register(app: typer.Typer) -> None:
    """Add the ``skills`` and ``agents`` command groups."""
    skills = typer.Typer(help="Skills the pod reads (SKILL.md folders).", no_args_is_help=True)
    skills.command("ls")(skills_ls)
    app.add_typer(skills, name="skills")
    agents = typer.Typer(help="Agents task may run (config and agent files).", no_args_is_help=True)
    agents.command("ls")(agents_ls)
    app.add_typer(agents, name="agents")
