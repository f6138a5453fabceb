"""``pod conformance -- CMD...``: run the conformance kit against any pod and print a report."""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path
from typing import Annotated

import typer

from cli.errors import CliError


def conformance(
    command: Annotated[
        list[str],
        typer.Argument(
            help="The pod's command after `--`; {socket}, {base_url} and {workspace} "
            "are filled in.",
            show_default=False,
        ),
    ],
    report_json: Annotated[
        Path | None, typer.Option("--report-json", help="Also write the report as JSON.")
    ] = None,
    rows: Annotated[
        list[str] | None,
        typer.Option(
            "--rows",
            help="Only rows whose id (<state>-<event>, tree-<hold>-<action>) matches this "
            "glob; repeatable.",
        ),
    ] = None,
    slow_tool: Annotated[
        str | None,
        typer.Option(
            "--slow-tool",
            help="JSON tool call the pod runs long enough to interrupt (default: "
            '{"name": "bash", "input": {"command": "sleep 30"}}).',
        ),
    ] = None,
    approval_tool: Annotated[
        str | None,
        typer.Option(
            "--approval-tool",
            help="JSON tool call the pod asks a person about before running it (default: "
            '{"name": "write_file", "input": {"path": "conformance-approval.txt", ...}}).',
        ),
    ] = None,
    input_tool: Annotated[
        str | None,
        typer.Option(
            "--input-tool",
            help="JSON tool call during which the tool asks the person for input (MCP "
            'elicitation; default: {"name": "mcp__kit__ask", "input": {}}, the kit\'s MCP '
            "server, python -m conformance.mcp_server, which the pod must declare).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds to wait for any one expected event.")
    ] = 10.0,
    show_skipped: Annotated[bool, typer.Option(help="List the rows a client cannot send.")] = False,
    thinking: Annotated[
        bool,
        typer.Option(
            "--thinking",
            help="The thinking profile: start the pod with thinking on (--thinking-args), "
            "make every reply think, and check that every request turns thinking on and "
            "that thinking blocks come back.",
        ),
    ] = False,
    thinking_args: Annotated[
        str,
        typer.Option(
            "--thinking-args",
            help="With --thinking: arguments appended to the pod's command to turn "
            "thinking on (split like a shell; '' when the command already does).",
        ),
    ] = "--thinking adaptive",
    tree: Annotated[
        bool,
        typer.Option(
            "--tree/--no-tree",
            help="Also run the tree cases (pause, resume, cancel and a kill -9 while child "
            "pods run or ask); they skip when the pod offers no task tool.",
        ),
    ] = True,
    continue_args: Annotated[
        str,
        typer.Option(
            "--continue-args",
            help="Arguments appended to the pod's command when a tree case restarts it "
            "after a kill -9, to continue its session (split like a shell).",
        ),
    ] = "--continue",
    web: Annotated[
        bool,
        typer.Option(
            "--web",
            help="The server-tools profile: start the pod with web search on (--web-args), "
            "make every reply search, pause_turn included, and check server tool blocks "
            "come back.",
        ),
    ] = False,
    web_args: Annotated[
        str, typer.Option("--web-args", help="With --web: arguments turning web search on.")
    ] = "--web on",
) -> None:
    """Drive a pod through every transition-table row and check what it does.

    Then the tree cases (--no-tree leaves them out). Exit 0 only when every runnable row
    passes (and, with --thinking, thinking blocks came back).
    """
    import sys

    from rich.console import Console

    from conformance.cases import Case, build_cases
    from conformance.driver import run_cases
    from conformance.options import kit_options
    from conformance.plan_cases import PlanCase, build_plan_cases
    from conformance.report import CaseResult, counts, print_report, run_problems, to_json
    from conformance.tree_cases import TreeCase, build_tree_cases

    try:
        options = kit_options(
            command,
            slow_tool=slow_tool,
            approval_tool=approval_tool,
            input_tool=input_tool,
            timeout_s=timeout,
            thinking=thinking,
            thinking_args=thinking_args,
            tree=tree,
            continue_args=continue_args,
            web=web,
            web_args=web_args,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    every: list[Case | TreeCase | PlanCase] = [
        *build_cases(),
        *build_plan_cases(),
        *(build_tree_cases() if tree else []),
    ]
    cases = [c for c in every if not rows or any(fnmatch(c.id, p) for p in rows)]
    if not cases:
        raise CliError(f"no row matches {', '.join(rows or [])}")
    console = Console() if sys.stdout.isatty() else Console(width=160)

    def progress(result: CaseResult) -> None:
        colour = {"passed": "green", "failed": "red", "skipped": "dim"}[result.outcome]
        if result.outcome != "skipped":
            console.print(
                f"[{colour}]{result.outcome:7}[/] {result.id} ({result.duration_s:.2f}s)",
                highlight=False,
            )

    results = run_cases(cases, options, on_result=progress)
    print_report(console, results, show_skipped=show_skipped, thinking=thinking, web=web)
    if report_json is not None:
        report = to_json(results, command=command, thinking=thinking, web=web)
        try:
            report_json.write_text(report + "\n", encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {report_json}: {exc.strerror or exc}") from None
    if counts(results)["failed"] or run_problems(results, thinking=thinking, web=web):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``conformance`` command."""

    app.command(
        "conformance",
        context_settings={"allow_interspersed_args": False},
    )(conformance)
