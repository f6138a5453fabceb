"""A command's pending steps as the held prompt's record keeps them, and as a restart reads
them back: a line that never reached its run is pending again, one that may have run is not."""

from __future__ import annotations

from orchestrator.adapters.session import HeldPromptRecord
from orchestrator.core.segments import WorkflowInvokeSegment
from orchestrator.runtime.controller import held_record, held_submission
from orchestrator.runtime.custom_commands import (
    CommandCatalog,
    CommandSpec,
    PendingStep,
    fill_markers,
    never_started,
)
from orchestrator.runtime.submit import Submission


def steps() -> list[PendingStep]:
    return [
        PendingStep(kind="bash", marker="\x00a\x00", command="echo a", call_id="c1",
                    state="done", output="a"),
        PendingStep(kind="bash", marker="\x00b\x00", command="echo b", call_id="c2",
                    state="started"),
        PendingStep(kind="bash", marker="\x00c\x00", command="echo c", call_id="c3",
                    state="started"),
        PendingStep(kind="mcp", marker="\x00d\x00", command="brief", server="notes",
                    arguments={"topic": "x"}, state="started"),
    ]  # fmt: skip


def test_steps_survive_the_held_record_and_a_restart_reads_them_truthfully() -> None:
    submission = Submission(
        segments=[WorkflowInvokeSegment(slug="c", arguments="x")],
        text="\x00a\x00|\x00b\x00|\x00c\x00|\x00d\x00",
        steps=steps(),
    )
    record = HeldPromptRecord.model_validate_json(held_record(submission, 3).model_dump_json())
    # c2 has a tool_start record (it may have run); c3 has none (it waited for approval).
    record.steps = never_started(record.steps, {"c2"})
    back = held_submission(record)
    assert [(s.call_id, s.state) for s in back.steps] == [
        ("c1", "done"),
        ("c2", "started"),
        ("c3", "pending"),
        ("", "pending"),
    ]
    assert back.steps[3].arguments == {"topic": "x"} and back.steps[3].server == "notes"
    assert back.segments == submission.segments
    for step, output in zip(back.steps, "abcd", strict=True):
        step.output = output
    assert fill_markers(back.text, back.steps) == "a|b|c|d"


def test_the_catalog_lists_winners_then_the_shadowed_and_keeps_prompts_apart() -> None:
    review = CommandSpec(name="review", source="user", description="mine\x1b[2J")
    theirs = CommandSpec(name="review", source="workspace")
    catalog = CommandCatalog(files=[review], shadowed=[(theirs, "user")])
    catalog.set_prompts("notes", [CommandSpec(name="mcp__notes__brief", source="mcp")])
    catalog.set_prompts("bad", [CommandSpec(name="mcp__bad__\x1b", source="mcp")])
    catalog.take_files(CommandCatalog(files=[review]))  # a fresh read of the folders
    listing = catalog.listing(request_id=7)
    assert listing.id == 7
    assert [(c.name, c.shadowed_by) for c in listing.commands] == [
        ("review", None),
        ("mcp__notes__brief", None),
    ]
    assert listing.commands[0].description == "mine[2J"
    assert catalog.find("mcp__notes__brief") is not None and catalog.find("nothing") is None
