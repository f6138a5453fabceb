"""`pod run` as a script or a person runs it: what lands on stdout and stderr, and the exit code."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli.commands.run import NOT_KEPT
from conformance.fake_api import FakeAnthropic, Fault
from tests.cli.helpers import pod, read_until, scripted_pod


def _start_run(env: dict[str, str], workspace: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "cli", "run", *args, "--workspace", str(workspace)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_provider_error_is_printed_once_and_model_and_provider_apply(
    env: dict[str, str], workspace: Path
) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("provider_max_retries = 1\ncontext_window = 200000\n")
    with FakeAnthropic([Fault(status=500, message="upstream is down")] * 2) as api:
        env = {**env, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
        done = pod(
            env, "run", "hi", "--provider", "anthropic", "--model", "claude-test-model",
            "--workspace", str(workspace),
        )  # fmt: skip
        assert [r.body["model"] for r in api.requests] == ["claude-test-model"] * 2
    assert done.returncode == 1, done.stderr
    # The fake lists no such model: thinking ("auto") cannot be decided and stays off, once.
    thinking, retry, *rest = done.stderr.splitlines()
    assert thinking.startswith("! info: thinking stays off: the Models API did not answer")
    assert retry.startswith("! warn: ") and "retry 1/1" in retry  # retries are still reported
    # The provider's "giving up" alert, the error event and the turn's alert are one failure.
    assert rest == [
        "pod: error: provider_error: provider returned 500 server error: upstream is down"
    ]
    status = json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)
    assert (status["provider"], status["model"]) == ("anthropic", "claude-test-model")


def test_a_reply_that_fails_midway_is_marked_as_not_kept(
    env: dict[str, str], workspace: Path
) -> None:
    broken = {"text": "Half an answ", "chunk_size": 4, "error": "the stream broke",
              "error_after_chunks": 2}  # fmt: skip
    with scripted_pod(env, workspace, [broken]) as socket:
        done = pod(env, "run", "go", "--socket", str(socket))
    assert done.returncode == 1
    assert done.stdout == "Half an \n"
    assert done.stderr.splitlines() == [NOT_KEPT, "pod: error: provider_error: the stream broke"]


@pytest.mark.parametrize(("method", "code"), [("pause", 3), ("cancel", 4)])
def test_an_interrupted_answer_is_marked_as_not_kept(
    env: dict[str, str], workspace: Path, method: str, code: int
) -> None:
    # Slowly: the answer streams for some 10 s, time enough for a second CLI process to start
    # on a loaded machine and pause it mid-stream.
    run = _start_run(env, workspace, "hello, slowly")
    try:
        read_until(run.stdout, b"scripted provider")  # the demo is streaming its answer
        assert pod(env, method, "--workspace", str(workspace)).returncode == 0
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == code
    assert out.endswith(b"\n") and b"Ctrl-X cancels." not in out  # cut off, then a newline
    lines = err.decode().splitlines()
    assert NOT_KEPT in lines
    assert (
        "pod: the turn is paused; `pod resume` continues it, the next `pod run` replaces it"
        in lines
    ) == (method == "pause")
    history = json.loads(pod(env, "history", "--workspace", str(workspace), "--json").stdout)
    assert [item["kind"] for item in history] == ["user_message"]  # the answer was not kept


def test_the_demo_runs_a_short_command_when_bash_is_allowed(
    env: dict[str, str], workspace: Path
) -> None:
    # The default mode asks before a command; a run with no terminal cannot ask, so it denies
    # at once (instead of hanging until its timeout) and the model reads why.
    refused = pod(env, "run", "run a command", "--workspace", str(workspace))
    assert refused.returncode == 0, refused.stderr
    # Said once, whole: what was asked, then the call's result with why and what to do.
    assert "? bash: run: echo 'hello from bash'; date; ls" in refused.stderr
    assert refused.stderr.count("not interactive") == 1, refused.stderr
    assert (
        "✗ not run: nobody could be asked to approve it (pod run is not interactive; allow such "
        "calls with --permission-mode (accept-edits, yolo) or an allow rule in [permissions])"
    ) in refused.stderr
    # The model is told nobody was asked, not that somebody refused; the demo's quote of it is
    # cut at a word's end.
    assert "not run: nobody could be asked to approve it (pod run is not interactive; allow" in (
        refused.stdout
    )
    assert "allow such calls with…" in refused.stdout, refused.stdout
    assert "denied by user" not in refused.stdout
    assert "\nhello from bash\n" not in refused.stderr  # it never ran
    pod(env, "shutdown", "--workspace", str(workspace))
    done = pod(env, "run", "--allow-bash", "run a command", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    assert "hello from bash" in done.stderr  # its live output
    assert "✓ bash: echo 'hello from bash'; date; ls — exit 0" in done.stderr
    assert "The tool returned 1 result(s):" in done.stdout


def test_the_demos_long_command_can_be_paused_while_it_runs(
    env: dict[str, str], workspace: Path
) -> None:
    run = _start_run(env, workspace, "--allow-bash", "run a long command")
    try:
        read_until(run.stderr, b"step 2 of 30")
        assert pod(env, "pause", "--workspace", str(workspace)).returncode == 0
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 3, err
    assert "✗ [Interrupted by user]" in err.decode()
    resumed = pod(env, "resume", "--detach", "--workspace", str(workspace))
    assert resumed.stdout == "running\n"
    history = json.loads(pod(env, "history", "--workspace", str(workspace), "--json").stdout)
    results = [item for item in history if item["kind"] == "tool_result"]
    assert len(results) == 1 and "step 2 of 30" in results[0]["content"]


def test_a_run_on_a_terminal_asks_before_a_command_and_obeys_the_answer(
    env: dict[str, str], workspace: Path
) -> None:
    import pexpect

    def run(*answers: str) -> str:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "cli", "run", "run a command", "--workspace", str(workspace)],
            env=env,
            encoding="utf-8",
            timeout=120,  # each expect: a pod starts on a loaded machine
        )
        seen = io.StringIO()
        child.logfile_read = seen
        for answer in answers:
            child.expect_exact("Allow? [y]es once, [a]lways this session, [n]o: ")
            child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, seen.getvalue()
        return seen.getvalue()

    asked = run("maybe", "n not now")  # a line that means nothing asks again
    assert "? bash: run: echo 'hello from bash'" in asked
    assert "denied by user: not now" in asked and "hello from bash\r\n" not in asked
    allowed = run("y")
    assert "✓ bash: echo 'hello from bash'; date; ls — exit 0" in allowed
    always = run("a")
    assert "exit 0" in always
    # Approved for the session: the next command runs without asking.
    again = run()
    assert "Allow?" not in again and "exit 0" in again


# -- Ctrl-C on a terminal (issue 20 HIGH-1) --------------------------------------------------


def _on_terminal(env: dict[str, str], workspace: Path, *args: str) -> Any:
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "cli", "run", *args, "--workspace", str(workspace)],
        env=env,
        encoding="utf-8",
        timeout=120,  # each expect: a pod starts on a loaded machine
    )
    child.logfile_read = io.StringIO()
    return child


def _ended(child: Any) -> tuple[int, str]:
    import pexpect

    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.logfile_read.getvalue()


def _status(env: dict[str, str], workspace: Path) -> dict[str, Any]:
    shown = pod(env, "status", "--workspace", str(workspace), "--json")
    return json.loads(shown.stdout)  # type: ignore[no-any-return]


def test_ctrl_c_during_a_command_pauses_the_turn_and_exits_3(
    env: dict[str, str], workspace: Path
) -> None:
    child = _on_terminal(env, workspace, "--allow-bash", "run a long command")
    child.expect_exact("step 2 of 30")
    child.sendintr()
    code, seen = _ended(child)
    assert code == 3, seen
    assert "pausing the turn" in seen
    assert "`pod resume` continues it, the next `pod run` replaces it" in seen
    assert "✗ [Interrupted by user]" in seen  # the command was stopped, not run to its end
    assert _status(env, workspace)["status"] == "paused"
    history = json.loads(pod(env, "history", "--workspace", str(workspace), "--json").stdout)
    [result] = [item for item in history if item["kind"] == "tool_result"]
    assert "step 30 of 30" not in result["content"]


def test_ctrl_c_while_the_answer_streams_pauses_the_turn(
    env: dict[str, str], workspace: Path
) -> None:
    child = _on_terminal(env, workspace, "tell me about this pod")
    child.expect("scripted")  # the demo's answer has started streaming
    child.sendintr()
    code, seen = _ended(child)
    assert code == 3, seen
    assert NOT_KEPT in seen
    assert _status(env, workspace)["status"] == "paused"


def test_ctrl_c_at_the_approval_prompt_withdraws_it_and_pauses(
    env: dict[str, str], workspace: Path
) -> None:
    child = _on_terminal(env, workspace, "run a command")
    child.expect_exact("Allow? [y]es once, [a]lways this session, [n]o: ")
    child.sendintr()
    code, seen = _ended(child)
    assert code == 3, seen
    status = _status(env, workspace)
    assert status["status"] == "paused" and status["approvals"] == []
    # Nobody is left waiting on an answer: the next run replaces the paused turn.
    again = pod(env, "run", "hello", "--workspace", str(workspace))
    assert again.returncode == 0, again.stderr


def test_two_quick_ctrl_cs_cancel_the_turn_and_exit_4(env: dict[str, str], workspace: Path) -> None:
    child = _on_terminal(env, workspace, "--allow-bash", "run a long command")
    child.expect_exact("step 2 of 30")
    child.sendintr()
    time.sleep(0.3)  # a person's double press; the pause has taken effect by now
    child.sendintr()
    code, seen = _ended(child)
    assert code == 4, seen
    assert "step 30 of 30" not in seen  # nothing it was doing started again
    assert "cancelling the turn" in seen
    assert _status(env, workspace)["status"] == "idle"
