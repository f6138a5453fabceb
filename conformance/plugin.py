"""pytest plugin (entry point ``pytest11``): the pod conformance kit.

Inactive unless ``--pod-command`` is given, so installing the package changes nothing for
other test suites: no items, no fixtures, no hooks that act. With it::

    pytest --pod-command 'my-pod --socket {socket} --workspace {workspace}' \\
        --pyargs conformance

collects one item per transition-table row from :mod:`conformance.cases`
(ids ``cases.py::<state>-<event>``; select with ``-k``). Rows a client cannot send (turn
outcomes, round markers) are collected as skipped, with the reason; the ``awaiting_input``
rows skip at run time, saying so, when the pod offers no input tool (``--pod-input-tool``). Each item runs the row
against a pod from a session-wide :class:`~conformance.driver.PodPool`. Then the tree cases
of :mod:`conformance.tree_cases` (``tree_cases.py::tree-<hold>-<action>``; off with
``--pod-no-tree``), skipped with the reason when the pod offers no ``task`` tool.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from conformance.cases import Case
    from conformance.options import KitOptions
    from conformance.process import PodPool
    from conformance.report import CaseResult
    from conformance.tree_cases import TreeCase

__all__ = ["ConformanceFile", "RowFailed", "RowItem", "TreeFile"]

_CASES_FILE = Path(__file__).with_name("cases.py").resolve()
_TREE_FILE = Path(__file__).with_name("tree_cases.py").resolve()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the conformance kit's options."""
    group = parser.getgroup("pod-conformance", "pod protocol conformance kit")
    group.addoption(
        "--pod-command",
        default=None,
        help=(
            "Command that starts the pod under test; {socket}, {base_url} and {workspace} "
            "are filled in. Enables the kit: collect it with --pyargs conformance."
        ),
    )
    group.addoption(
        "--pod-slow-tool",
        default=None,
        help=(
            "JSON tool call the pod runs long enough to interrupt "
            '(default: {"name": "bash", "input": {"command": "sleep 30"}}).'
        ),
    )
    group.addoption(
        "--pod-approval-tool",
        default=None,
        help=(
            "JSON tool call the pod asks a person about before running it (default: "
            '{"name": "write_file", "input": {"path": "conformance-approval.txt", ...}}).'
        ),
    )
    group.addoption(
        "--pod-input-tool",
        default=None,
        help=(
            "JSON tool call during which the tool asks the person for input (MCP "
            'elicitation; default: {"name": "mcp__kit__ask", "input": {}}, the kit\'s MCP '
            "server, which the pod must declare)."
        ),
    )
    group.addoption(
        "--pod-thinking",
        action="store_true",
        default=False,
        help=(
            "The thinking profile: start each pod with thinking on (--pod-thinking-args), make "
            "every reply think, and check that every request turns thinking on and that "
            "thinking blocks come back."
        ),
    )
    group.addoption(
        "--pod-thinking-args",
        default="--thinking adaptive",
        help=(
            "With --pod-thinking: arguments appended to the pod command to turn thinking on "
            "(default: --thinking adaptive; '' when the command already does)."
        ),
    )
    group.addoption(
        "--pod-web",
        action="store_true",
        default=False,
        help=(
            "The server-tools profile: start each pod with web search on (--pod-web-args), "
            "make every reply search (pause_turn included), and check that server tool blocks "
            "come back."
        ),
    )
    group.addoption(
        "--pod-web-args",
        default="--web on",
        help=(
            "With --pod-web: arguments appended to the pod command to turn web search on "
            "(default: --web on; '' when the command already does)."
        ),
    )
    group.addoption(
        "--pod-no-tree",
        action="store_true",
        default=False,
        help="Leave out the tree cases (a pod that delegates to child pods with a task tool).",
    )
    group.addoption(
        "--pod-continue-args",
        default="--continue",
        help=(
            "Arguments appended to the pod command when a tree case restarts it after a "
            "kill -9, to continue its session (default: --continue)."
        ),
    )
    group.addoption(
        "--pod-timeout",
        type=float,
        default=10.0,
        help="Seconds to wait for any one expected event (default 10).",
    )


class _Kit:
    """The session's options, pool and results."""

    def __init__(self, options: KitOptions) -> None:
        from conformance.process import PodPool

        self.options = options
        self.pool: PodPool = PodPool(options)
        self.results: list[CaseResult] = []

    def run(self, case: Case | TreeCase) -> CaseResult:
        from conformance.driver import run_case
        from conformance.plan_cases import PlanCase, run_plan_case
        from conformance.tree_cases import TreeCase
        from conformance.tree_driver import run_tree_case

        if isinstance(case, TreeCase):
            result = asyncio.run(run_tree_case(case, self.pool, self.options))
        elif isinstance(case, PlanCase):
            result = asyncio.run(run_plan_case(case, self.pool, self.options))
        else:
            result = asyncio.run(run_case(case, self.pool, self.options))
        self.results.append(result)
        return result


_KIT = pytest.StashKey[_Kit]()


def kit_options(
    command: str,
    slow_tool: str | None,
    timeout: float,
    approval_tool: str | None = None,
    *,
    thinking: bool = False,
    thinking_args: str = "--thinking adaptive",
    tree: bool = True,
    continue_args: str = "--continue",
    input_tool: str | None = None,
    web: bool = False,
    web_args: str = "--web on",
) -> KitOptions:
    """Options from the command-line strings; ``UsageError`` when they make no sense."""
    from conformance.options import ToolOptionError
    from conformance.options import kit_options as build

    try:
        return build(
            command,
            slow_tool=slow_tool,
            approval_tool=approval_tool,
            input_tool=input_tool,
            timeout_s=timeout,
            thinking=thinking,
            thinking_args=thinking_args,
            tree=tree,
            continue_args=continue_args,
            flag_prefix="--pod-",
            web=web,
            web_args=web_args,
        )
    except ToolOptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    except ValueError as exc:
        raise pytest.UsageError(f"pod conformance: {exc}") from None


def pytest_configure(config: pytest.Config) -> None:
    """Set the kit up when ``--pod-command`` is given; otherwise do nothing."""
    command = config.getoption("--pod-command", None)
    if not command:
        return
    options = kit_options(
        command,
        config.getoption("--pod-slow-tool"),
        config.getoption("--pod-timeout"),
        config.getoption("--pod-approval-tool"),
        thinking=config.getoption("--pod-thinking"),
        thinking_args=config.getoption("--pod-thinking-args"),
        tree=not config.getoption("--pod-no-tree"),
        continue_args=config.getoption("--pod-continue-args"),
        input_tool=config.getoption("--pod-input-tool"),
        web=config.getoption("--pod-web"),
        web_args=config.getoption("--pod-web-args"),
    )
    config.addinivalue_line("markers", "pod_conformance: a row of the pod conformance kit")
    config.stash[_KIT] = _Kit(options)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop every pod the kit still holds."""
    kit = config.stash.get(_KIT, None)
    if kit is not None:
        kit.pool.close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Claim ``conformance/cases.py`` (and ``tree_cases.py``) as the kit's suite (only when
    enabled)."""
    kit = parent.config.stash.get(_KIT, None)
    if kit is None or file_path.name not in (_CASES_FILE.name, _TREE_FILE.name):
        return None
    if file_path.resolve() == _CASES_FILE:
        return ConformanceFile.from_parent(parent, path=file_path)
    if file_path.resolve() == _TREE_FILE and kit.options.tree:
        return TreeFile.from_parent(parent, path=file_path)
    return None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail a run whose rows passed but that breaks a whole-run check (the thinking profile
    with no thinking block sent back)."""
    kit = session.config.stash.get(_KIT, None)
    if kit is None or not kit.results:
        return
    from conformance.report import run_problems

    problems = run_problems(kit.results, thinking=kit.options.thinking, web=kit.options.web)
    if problems and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """One line per row that ran, after pytest's own summary; then the requests on the wire
    and the whole run's problems."""
    kit = config.stash.get(_KIT, None)
    if kit is None or not kit.results:
        return
    from conformance.report import counts, run_problems, tree_line, wire_line

    terminalreporter.section("pod conformance")
    for result in kit.results:
        if result.outcome == "skipped":
            continue
        why = "; ".join(result.reasons) if result.outcome == "failed" else ""
        terminalreporter.write_line(
            f"{result.outcome.upper():7} {result.id:28} {result.duration_s:6.2f}s  {why}"
        )
    for result in kit.results:
        if result.outcome == "skipped" and result.group == "tree":
            terminalreporter.write_line(f"SKIPPED {result.id:28}          {result.reasons[0]}")
    tally = counts(kit.results)
    terminalreporter.write_line(
        f"{tally['passed']} rows passed, {tally['failed']} failed against "
        f"{' '.join(kit.options.command)}"
    )
    terminalreporter.write_line(
        wire_line(kit.results, thinking=kit.options.thinking, web=kit.options.web)
    )
    if tree := tree_line(kit.results):
        terminalreporter.write_line(tree)
    for problem in run_problems(kit.results, thinking=kit.options.thinking, web=kit.options.web):
        terminalreporter.write_line(f"FAILED  {problem}", red=True)


class ConformanceFile(pytest.File):
    """The kit's suite: one item per transition-table row."""

    def collect(self) -> Iterator[pytest.Item]:
        """Items in table order; runtime-only rows are marked skipped with their reason."""
        from conformance.cases import build_cases
        from conformance.plan_cases import PlanCase, build_plan_cases

        cases: list[Case | PlanCase] = [*build_cases(), *build_plan_cases()]
        for case in cases:
            item = RowItem.from_parent(self, name=case.id, case=case)
            item.add_marker(pytest.mark.pod_conformance)
            if case.skip_reason is not None:
                item.add_marker(pytest.mark.skip(reason=case.skip_reason))
            yield item


class TreeFile(pytest.File):
    """The kit's tree cases: one item per hold × action."""

    def collect(self) -> Iterator[pytest.Item]:
        """Items in order; each skips at run time when the pod offers no ``task`` tool."""
        from conformance.tree_cases import build_tree_cases

        for case in build_tree_cases():
            item = RowItem.from_parent(self, name=case.id, case=case)
            item.add_marker(pytest.mark.pod_conformance)
            yield item


class RowFailed(Exception):
    """A row's checks failed; carries the result for the report.

    A verdict, not a runtime error: it carries a pod's failed check to the test report and stays
    outside the error tree, so no handler of the runtime's errors takes it for one."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.message())
        self.result = result


class RowItem(pytest.Item):
    """One transition-table row (or tree case) run against the pod under test."""

    def __init__(self, *, case: Case | TreeCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        """Run the row; raise :class:`RowFailed` with the reasons when a check fails."""
        result = self.config.stash[_KIT].run(self.case)
        if result.outcome == "failed":
            raise RowFailed(result)
        if result.outcome == "skipped":
            pytest.skip(result.reasons[0] if result.reasons else "skipped")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """The row's reasons and the events seen, not a traceback into the kit."""
        if isinstance(excinfo.value, RowFailed):
            return excinfo.value.result.message()
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the row comes from: the table (or the tree cases), not a line of code."""
        fields = self.case.report_fields()
        kind = "tree case" if fields["id"].startswith("tree-") else "transition"
        return self.path, 0, f"{kind} {fields['state']} × {fields['event']}"
