"""The system prompt: section order, the resident-knowledge levers, and the rendered text."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.knowledge import ResidentEntry
from orchestrator.config.model import PodConfig
from orchestrator.config.sections import MemoryConfig
from orchestrator.runtime.system_prompt import (
    AGENTS_MD_MAX_BYTES,
    BASE_INSTRUCTIONS,
    AgentsMd,
    Boundaries,
    PromptParts,
    SystemPrompt,
    build_system_prompt,
    render_system_prompt,
)


def write_record(root: Path, slug: str, description: str, invoke: bool) -> None:
    path = root / "knowledge" / f"{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    flag = "true" if invoke else "false"
    path.write_text(
        f"---\ndescription: {description}\nmodel_invokation: {flag}\n---\nBody of {slug}.\n",
        encoding="utf-8",
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws.resolve()


def build(workspace: Path, **config: object) -> SystemPrompt:
    pod_config = PodConfig.model_validate({"workspace": workspace, **config})
    return build_system_prompt(pod_config, ScopedFS(workspace))


def test_whole_prompt_for_a_small_workspace(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Run `make check` before finishing.\n", encoding="utf-8")
    write_record(workspace, "style", "Prefer small functions.", invoke=True)
    write_record(workspace, "archive", "Old notes.", invoke=False)
    write_record(workspace, "build", '"Use make,\\nnot raw cargo."', invoke=True)

    prompt = build(workspace, allow_bash=True, bash_timeout_s=30, read_roots=["/opt/ref"])

    assert prompt == SystemPrompt(
        text=BASE_INSTRUCTIONS
        + f"""

## Working boundaries

- Workspace (read and write): {workspace}
- Extra read-only roots: /opt/ref
- Extra writable roots: none
- Shell: enabled (the `bash` tool); commands run in the workspace and time out after 30 s
- Knowledge records: {workspace}/knowledge, read with `knowledge_search` and `memory_read`

Access outside these roots is refused, including through symlinks. Relative paths are relative \
to the workspace.

## AGENTS.md

Instructions from `AGENTS.md` at the workspace root; follow them.

Run `make check` before finishing.

## Resident knowledge

- build: Use make, not raw cargo.
- style: Prefer small functions.

These are summaries of the knowledge records in `knowledge/`. Call `memory_read` with a slug \
to read a record's full body when it is relevant, and `knowledge_search` to find records that \
are not listed here.
""",
        sections=["base", "working_boundaries", "agents_md", "resident_knowledge"],
        warnings=[],
    )


def test_render_is_pure_and_exact() -> None:
    parts = PromptParts(
        base="You are a test agent.\n",
        boundaries=Boundaries(
            workspace=Path("/ws"),
            read_roots=[Path("/ref"), Path("/docs")],
            write_roots=[Path("/out")],
        ),
        agents_md=AgentsMd(text="Be brief.", truncated=True, total_bytes=40_000),
        resident=[ResidentEntry("a", "Alpha.")],
    )

    text = render_system_prompt(parts)

    assert text == render_system_prompt(parts)
    assert text == (
        "You are a test agent.\n\n"
        "## Working boundaries\n\n"
        "- Workspace (read and write): /ws\n"
        "- Extra read-only roots: /ref, /docs\n"
        "- Extra writable roots: /out\n"
        "- Shell: disabled; you cannot run commands\n\n"
        "Access outside these roots is refused, including through symlinks. "
        "Relative paths are relative to the workspace.\n\n"
        "## AGENTS.md\n\n"
        "Instructions from `AGENTS.md` at the workspace root; follow them.\n\n"
        "Be brief.\n\n"
        f"[AGENTS.md truncated: {AGENTS_MD_MAX_BYTES} of 40000 bytes shown; "
        "read the file for the rest]\n\n"
        "## Resident knowledge\n\n"
        "- a: Alpha.\n\n"
        "These are summaries of the knowledge records in `knowledge/`. Call `memory_read` with "
        "a slug to read a record's full body when it is relevant, and `knowledge_search` to "
        "find records that are not listed here.\n"
    )


def test_sections_appear_in_the_documented_order(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Agents.\n", encoding="utf-8")
    write_record(workspace, "r", "Resident.", invoke=True)

    prompt = build(workspace)

    headings = ["## Working boundaries", "## AGENTS.md", "## Resident knowledge"]
    positions = [prompt.text.index(heading) for heading in headings]
    assert positions == sorted(positions)
    assert prompt.text.startswith(BASE_INSTRUCTIONS)
    assert prompt.sections == ["base", "working_boundaries", "agents_md", "resident_knowledge"]


def test_minimal_prompt_has_base_and_boundaries_only(workspace: Path) -> None:
    prompt = build(workspace)

    assert prompt.sections == ["base", "working_boundaries"]
    assert prompt.warnings == []


def test_memory_disabled_means_no_knowledge_at_all(workspace: Path) -> None:
    write_record(workspace, "r", "Resident.", invoke=True)

    prompt = build(workspace, memory={"enabled": False})

    assert prompt.sections == ["base", "working_boundaries"]
    assert "knowledge" not in prompt.text.split("## Working boundaries")[1]


def test_inject_resident_knowledge_false_leaves_the_section_out(workspace: Path) -> None:
    write_record(workspace, "r", "Resident.", invoke=True)

    prompt = build(workspace, inject_resident_knowledge=False)

    assert prompt.sections == ["base", "working_boundaries"]
    assert "Resident." not in prompt.text
    # The tools still work, so the boundaries still say where records live.
    assert f"- Knowledge records: {workspace}/knowledge" in prompt.text


def test_no_resident_records_means_no_section(workspace: Path) -> None:
    write_record(workspace, "off", "Not resident.", invoke=False)

    prompt = build(workspace)

    assert prompt.sections == ["base", "working_boundaries"]
    assert "## Resident knowledge" not in prompt.text


def test_memory_root_outside_the_workspace(workspace: Path, tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    write_record(memory, "shared", "Shared across pods.", invoke=True)
    write_record(workspace, "local", "Ignored: not the memory root.", invoke=True)

    prompt = build(workspace, memory=MemoryConfig(workspace_root=memory))

    assert "- shared: Shared across pods." in prompt.text
    assert "local" not in prompt.text
    assert f"- Knowledge records: {memory.resolve()}/knowledge" in prompt.text


def test_bad_knowledge_files_become_warnings(workspace: Path) -> None:
    write_record(workspace, "good", "Fine.", invoke=True)
    (workspace / "knowledge" / "bad.md").write_text("no frontmatter\n", encoding="utf-8")

    prompt = build(workspace)

    assert "- good: Fine." in prompt.text
    assert prompt.warnings == [
        "knowledge skipped: knowledge/bad.md:1: missing frontmatter: the file must start with "
        "a '---' line"
    ]


def test_agents_md_is_capped_with_a_warning(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("a" * (AGENTS_MD_MAX_BYTES + 10), encoding="utf-8")

    prompt = build(workspace)

    total = AGENTS_MD_MAX_BYTES + 10
    assert "a" * AGENTS_MD_MAX_BYTES + "\n\n[AGENTS.md truncated" in prompt.text
    assert "a" * (AGENTS_MD_MAX_BYTES + 1) not in prompt.text
    assert prompt.warnings == [
        f"AGENTS.md is {total} bytes; only the first {AGENTS_MD_MAX_BYTES} are in the system prompt"
    ]


def test_empty_agents_md_adds_no_section(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("\n  \n", encoding="utf-8")

    assert build(workspace).sections == ["base", "working_boundaries"]


def test_agents_md_outside_the_scope_is_not_read(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET\n", encoding="utf-8")
    (workspace / "AGENTS.md").symlink_to(secret)

    prompt = build(workspace)

    assert prompt.sections == ["base", "working_boundaries"]
    assert "TOP SECRET" not in prompt.text
    assert len(prompt.warnings) == 1
    assert prompt.warnings[0].startswith("AGENTS.md left out of the system prompt: symlink")


def test_agents_md_directory_is_a_warning(workspace: Path) -> None:
    (workspace / "AGENTS.md").mkdir()

    prompt = build(workspace)

    assert prompt.warnings == ["AGENTS.md left out of the system prompt: is a directory"]


def test_relative_roots_resolve_against_the_workspace(workspace: Path) -> None:
    prompt = build(workspace, write_roots=["../out"])

    assert f"- Extra writable roots: {workspace.parent / 'out'}" in prompt.text


def test_a_child_pod_is_told_it_works_for_another_agent_and_its_role() -> None:
    from orchestrator.runtime.system_prompt import Boundaries, PromptParts, prompt_sections

    top = PromptParts(boundaries=Boundaries(workspace=Path("/w")))
    assert "sub_pod" not in [name for name, _ in prompt_sections(top)]
    child = PromptParts(boundaries=Boundaries(workspace=Path("/w")), depth=1, role="Review.")
    name, text = prompt_sections(child)[-1]
    assert name == "sub_pod"
    assert "Your last message is all the other agent receives" in text
    assert text.endswith("Review.")
