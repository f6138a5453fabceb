"""The system prompt, assembled in one place and in a fixed order.

Sections, in order (only the first two are always present):

1. base instructions — who the agent is and how it works;
2. ``## Working boundaries`` — the workspace, extra read and write roots, whether the shell
   is enabled;
3. ``## AGENTS.md`` — the workspace root's ``AGENTS.md``, read through the scoped file system
   and capped, when the file exists and is not empty;
4. ``## Resident knowledge`` — one ``- <slug>: <description>`` line per record with
   ``model_invokation: true``, in slug order, when memory is enabled, the pod injects resident
   knowledge, and at least one such record exists;
5. ``## Skills`` — one ``- <name>: <description>`` line per skill, in lookup order, within
   ``[skills] prompt_max_chars``; skills past it are named only, and the section says so
   (docs/skills.md);
6. ``## Sub-pod`` — for a child pod (``subpods.depth`` > 0): that it works for another agent,
   that its last message is all that agent receives, and its agent's instructions
   (``subpods.role``).

:func:`build_system_prompt` gathers the inputs (the only I/O here); :func:`render_system_prompt`
turns them into text and is pure, so a prompt can be explained from its parts alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.scoped_fs import FsError, NotFound, ScopedFS
from orchestrator.capabilities.knowledge import (
    ResidentEntry,
    collect_resident_knowledge,
    knowledge_dir,
    memory_fs,
)
from orchestrator.capabilities.permissions import bash_offered
from orchestrator.config.model import PodConfig

AGENTS_MD = "AGENTS.md"
AGENTS_MD_MAX_BYTES = 32 * 1024

BASE_INSTRUCTIONS = """\
You are a coding agent running in a pod: a session bound to one workspace, with tools to \
read, search and edit files there and, when enabled, to run shell commands. You help the user \
understand, change, test and explain code.

How to work:
- Understand before you change: read the relevant code and look things up rather than guess \
names, paths or APIs.
- Make the smallest change that does the job well, in the style of the surrounding code. Do not \
reformat, rename or tidy what you were not asked to touch.
- Be careful with files: stay inside the roots listed under Working boundaries, re-read a file \
before editing it if it may have changed, and never delete or overwrite work you did not create \
unless asked.
- Ask before anything destructive or irreversible, and when a request is ambiguous enough that \
a wrong guess would waste the user's time.
- Verify your work: run the project's tests or checks when you can, and say plainly what you \
could not verify.
- When a tool call fails, read the error and change the approach; do not repeat the same call \
unchanged.
- Keep replies short and concrete: what you did, what you found, what remains. Give paths \
relative to the workspace.

The user can interrupt a turn. If you are told the previous turn was interrupted, do not assume \
its unfinished work was done; check."""

KNOWLEDGE_TOOLS_HINT = (
    "These are summaries of the knowledge records in `knowledge/`. Call `memory_read` with a "
    "slug to read a record's full body when it is relevant, and `knowledge_search` to find "
    "records that are not listed here."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Boundaries:
    """What the pod may touch, as the model is told it."""

    workspace: Path
    read_roots: list[Path] = field(default_factory=list)
    """Extra read-only roots."""
    write_roots: list[Path] = field(default_factory=list)
    """Extra writable (and so readable) roots."""
    bash_enabled: bool = False
    bash_timeout_s: float = 120.0
    knowledge_dir: Path | None = None
    """Where knowledge records live, when memory is enabled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentsMd:
    """The workspace's ``AGENTS.md``, possibly cut at the cap."""

    text: str
    truncated: bool = False
    total_bytes: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptParts:
    """Every input of the system prompt, gathered before rendering."""

    base: str = BASE_INSTRUCTIONS
    boundaries: Boundaries
    agents_md: AgentsMd | None = None
    resident: list[ResidentEntry] = field(default_factory=list)
    """Resident knowledge; empty means no section."""
    skills: Sequence[tuple[str, str]] = ()
    """(name, description) of each skill in use; empty means no section."""
    skills_budget: int = 0
    """Characters the skills' lines may take; past it the rest are named only."""
    depth: int = 0
    """Where the pod stands in a tree of pods (0: started by a person)."""
    role: str = ""
    """A child's instructions from its parent's agent definition."""


@dataclass(frozen=True, slots=True)
class SystemPrompt:
    """The rendered prompt, its section names in order, and problems met while gathering."""

    text: str
    sections: list[str]
    warnings: list[str]


# -- rendering (pure) ---------------------------------------------------------------------------


def _render_boundaries(bounds: Boundaries) -> str:
    def roots(paths: list[Path]) -> str:
        return ", ".join(str(p) for p in paths) if paths else "none"

    if bounds.bash_enabled:
        shell = (
            "enabled (the `bash` tool); commands run in the workspace and time out after "
            f"{bounds.bash_timeout_s:g} s"
        )
    else:
        shell = "disabled; you cannot run commands"
    lines = [
        "## Working boundaries",
        "",
        f"- Workspace (read and write): {bounds.workspace}",
        f"- Extra read-only roots: {roots(bounds.read_roots)}",
        f"- Extra writable roots: {roots(bounds.write_roots)}",
        f"- Shell: {shell}",
    ]
    if bounds.knowledge_dir is not None:
        lines.append(
            f"- Knowledge records: {bounds.knowledge_dir}, read with `knowledge_search` "
            "and `memory_read`"
        )
    lines += [
        "",
        "Access outside these roots is refused, including through symlinks. Relative paths "
        "are relative to the workspace.",
    ]
    return "\n".join(lines)


def _render_agents_md(agents: AgentsMd) -> str:
    text = agents.text.strip()
    if agents.truncated:
        text += (
            f"\n\n[{AGENTS_MD} truncated: {AGENTS_MD_MAX_BYTES} of {agents.total_bytes} bytes "
            "shown; read the file for the rest]"
        )
    return (
        f"## {AGENTS_MD}\n\n"
        f"Instructions from `{AGENTS_MD}` at the workspace root; follow them.\n\n{text}"
    )


def _render_resident(entries: list[ResidentEntry]) -> str:
    lines = [f"- {entry.slug}: {entry.description}" for entry in entries]
    return "## Resident knowledge\n\n" + "\n".join(lines) + "\n\n" + KNOWLEDGE_TOOLS_HINT


SKILLS_HINT = (
    "Skills are instructions and files for particular tasks. When a task matches a skill's "
    "description, call the `skill` tool with its name before you start, then follow what it "
    "returns and read its files with `read_file` as it says."
)


SKILLS_NAMES_MIN_CHARS = 2_000
"""The names past the budget take at most the budget again (this much when it is smaller)."""


def _named(skills: Sequence[tuple[str, str]], limit: int) -> str:
    # A repository may ship a thousand skills: their names are bounded too.
    names: list[str] = []
    used = 0
    for name, _ in skills:
        if used + len(name) + 2 > limit:
            return ", ".join(names) + f" and {len(skills) - len(names)} more (pod skills ls)"
        names.append(name)
        used += len(name) + 2
    return ", ".join(names)


def _render_skills(skills: Sequence[tuple[str, str]], budget: int) -> str:
    lines: list[str] = []
    spent = 0
    for index, (name, description) in enumerate(skills):
        line = f"- {name}: {description}"
        if spent + len(line) + 1 > budget:
            rest = _named(skills[index:], max(budget, SKILLS_NAMES_MIN_CHARS))
            lines.append(
                f"\nMore skills, named only (the listing is kept to {budget:,} characters; "
                f"`skill` returns any of them): {rest}"
            )
            break
        lines.append(line)
        spent += len(line) + 1
    return "## Skills\n\n" + SKILLS_HINT + "\n\n" + "\n".join(lines).strip("\n")


SUB_POD = """\
## Sub-pod

You are a child pod: another agent started you to do one task, and nobody but that agent \
reads this conversation. Do the task with your tools, without asking anyone questions, then \
end with a concise report: what you did, what you found, what you changed and what remains. \
Your last message is all the other agent receives."""


def _render_sub_pod(role: str) -> str:
    if not role.strip():
        return SUB_POD
    return f"{SUB_POD}\n\nYour role, as the other agent defined it:\n\n{role.strip()}"


def prompt_sections(parts: PromptParts) -> list[tuple[str, str]]:
    """``(name, text)`` of each present section, in prompt order."""
    sections = [
        ("base", parts.base.strip()),
        ("working_boundaries", _render_boundaries(parts.boundaries)),
    ]
    if parts.agents_md is not None and parts.agents_md.text.strip():
        sections.append(("agents_md", _render_agents_md(parts.agents_md)))
    if parts.resident:
        sections.append(("resident_knowledge", _render_resident(parts.resident)))
    if parts.skills:
        sections.append(("skills", _render_skills(parts.skills, parts.skills_budget)))
    if parts.depth > 0:
        sections.append(("sub_pod", _render_sub_pod(parts.role)))
    return sections


def _join(sections: list[tuple[str, str]]) -> str:
    return "\n\n".join(text for _, text in sections) + "\n"


def render_system_prompt(parts: PromptParts) -> str:
    """The prompt text: sections separated by one blank line."""
    return _join(prompt_sections(parts))


# -- gathering (I/O) ----------------------------------------------------------------------------


def _absolute(workspace: Path, path: Path) -> Path:
    # Configured roots may be written relative to the workspace.
    return (workspace / path.expanduser()).resolve()


def _read_agents_md(fs: ScopedFS, warnings: list[str]) -> AgentsMd | None:
    try:
        file = fs.read_text(AGENTS_MD, max_bytes=AGENTS_MD_MAX_BYTES)
    except NotFound:
        return None
    except FsError as exc:
        warnings.append(f"{AGENTS_MD} left out of the system prompt: {exc.reason}")
        return None
    if file.truncated:
        warnings.append(
            f"{AGENTS_MD} is {file.total_bytes} bytes; only the first "
            f"{AGENTS_MD_MAX_BYTES} are in the system prompt"
        )
    return AgentsMd(text=file.text, truncated=file.truncated, total_bytes=file.total_bytes)


def _resident_knowledge(config: PodConfig, warnings: list[str]) -> list[ResidentEntry]:
    if not (config.memory.enabled and config.inject_resident_knowledge):
        return []
    root = config.memory_root()
    found = collect_resident_knowledge(memory_fs(root), root)
    warnings.extend(
        f"knowledge skipped: {issue.location(root)}: {issue.message}" for issue in found.skipped
    )
    return found.entries


def gather_prompt_parts(
    config: PodConfig, fs: ScopedFS, skills: Sequence[tuple[str, str]] = ()
) -> tuple[PromptParts, list[str]]:
    """Read everything the prompt needs; problems become warnings, never exceptions.
    ``skills``: (name, description) of the skills in use (found by the caller)."""
    warnings: list[str] = []
    workspace = fs.workspace
    boundaries = Boundaries(
        workspace=workspace,
        read_roots=[_absolute(workspace, p) for p in config.read_roots],
        write_roots=[_absolute(workspace, p) for p in config.write_roots],
        bash_enabled=bash_offered(config),
        bash_timeout_s=config.bash_timeout_s,
        knowledge_dir=knowledge_dir(config.memory_root()) if config.memory.enabled else None,
    )
    parts = PromptParts(
        boundaries=boundaries,
        agents_md=_read_agents_md(fs, warnings),
        resident=_resident_knowledge(config, warnings),
        skills=list(skills) if config.skills.enabled else [],
        skills_budget=config.skills.prompt_max_chars,
        depth=config.subpods.depth,
        role=config.subpods.role,
    )
    return parts, warnings


def build_system_prompt(
    config: PodConfig, fs: ScopedFS, skills: Sequence[tuple[str, str]] = ()
) -> SystemPrompt:
    """Gather the inputs and render the system prompt, with any warnings for the pod to raise."""
    parts, warnings = gather_prompt_parts(config, fs, skills)
    sections = prompt_sections(parts)
    names = [name for name, _ in sections]
    return SystemPrompt(text=_join(sections), sections=names, warnings=warnings)
