"""The sub-pods start their children only through the launcher the serving layer gives them:
what it is asked to start, and what a launcher's refusal becomes for the model."""

from __future__ import annotations

from pathlib import Path

from orchestrator.capabilities.subpods.children import Children
from orchestrator.capabilities.subpods.launcher import ChildLinkError, ChildStart, RunningChild
from orchestrator.capabilities.subpods.parent import ParentLinks
from orchestrator.capabilities.subpods.spec import ChildRequest
from orchestrator.capabilities.tools.base import PartialOutput
from orchestrator.config.model import PodConfig
from orchestrator.config.subpods import SubpodsConfig


class RefusingLauncher:
    """A launcher that records what it was asked to start and refuses it."""

    def __init__(self) -> None:
        self.asked: list[ChildStart] = []

    async def __call__(self, start: ChildStart) -> RunningChild:
        self.asked.append(start)
        raise ChildLinkError("no room for another pod")


async def test_a_child_is_started_by_the_injected_launcher_and_its_refusal_is_the_result(
    tmp_path: Path,
) -> None:
    launcher = RefusingLauncher()
    config = PodConfig(workspace=tmp_path, name="parent", subpods=SubpodsConfig(enabled=True))
    children = Children(
        config=config, session_path=tmp_path / "s.jsonl", records={}, launcher=launcher
    )
    recorded: list[object] = []

    async def record(item: object) -> None:
        recorded.append(item)

    children.links = ParentLinks(
        record=record,
        emit=lambda name, data: None,
        alert=lambda level, source, text: None,
        approvals=None,  # type: ignore[arg-type]  # never asked here
        elicitations=None,  # type: ignore[arg-type]
        signal=lambda event: None,
        offered=lambda: ["read_file"],
    )
    output = await children.run(
        "call-1", ChildRequest(prompt="look around", name="scout"), PartialOutput()
    )
    [start] = launcher.asked
    record_ = children.records["call-1"]
    assert recorded == [record_]  # written ahead, before the launcher was asked
    assert start.name == record_.name and start.name.startswith("parent.scout")
    assert start.workspace == tmp_path
    assert start.config["name"] == start.name and start.config["session"] == record_.session
    assert output.is_error
    assert "did not start: no room for another pod" in output.summary
    assert "call-1" not in children.live
