"""Taking command lines apart: every command a line runs, however it is spelled."""

from __future__ import annotations

import pytest

from orchestrator.capabilities.permissions import parse_command


def names(line: str) -> list[str]:
    return [c.name for c in parse_command(line).commands]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (" rm -f x", ["rm"]),
        ("/bin/rm -f x", ["rm"]),
        ("\\rm x", ["rm"]),
        ("r''m x", ["rm"]),
        ('"rm" x', ["rm"]),
        ("true; rm x", ["true", "rm"]),
        ("true && rm x || ls", ["true", "rm", "ls"]),
        ("echo x | xargs rm", ["echo", "xargs", "rm"]),
        ("(cd a && rm x)", ["cd", "rm"]),
        ("{ rm x; }", ["rm"]),
        ("f() { rm x; }; f", ["rm", "f"]),
        ("echo $(rm x)", ["echo", "rm"]),
        ("echo `rm x`", ["echo", "rm"]),
        ("cat <(rm x)", ["cat", "rm"]),
        ("if true; then rm x; fi", ["true", "rm"]),
        ("for f in a b; do rm $f; done", ["rm"]),
        ("while true; do rm x; done", ["true", "rm"]),
        ("git status\nrm x", ["git", "rm"]),
    ],
)
def test_every_command_is_found_by_its_basename(line: str, expected: list[str]) -> None:
    parsed = parse_command(line)
    assert sorted(c.name for c in parsed.commands) == sorted(expected)
    assert not parsed.opaque


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ("env rm x", ("rm", "x")),
        ("env -i FOO=1 rm x", ("rm", "x")),
        ("FOO=1 rm x", ("rm", "x")),
        ("command rm x", ("rm", "x")),
        ("builtin cd x", ("cd", "x")),
        ("exec rm x", ("rm", "x")),
        ("nohup rm x", ("rm", "x")),
        ("nice -n 5 rm x", ("rm", "x")),
        ("timeout 5 rm x", ("rm", "x")),
        ("timeout -s KILL 5 rm x", ("rm", "x")),
        ("sudo -u root rm x", ("rm", "x")),
        ("stdbuf -oL rm x", ("rm", "x")),
        ("bash -c 'rm x'", ("rm", "x")),
        ('sh -c "ls; rm x"', ("rm", "x")),
        ("eval 'rm x'", ("rm", "x")),
        ("xargs rm", ("rm", "…")),
        ("xargs -0 -n1 rm -f", ("rm", "-f", "…")),
        ("find . -name '*.pyc' -delete", ("rm", "…")),
        ("find . -exec rm {} \\;", ("rm", "{}")),
    ],
)
def test_wrappers_are_seen_through_to_the_command_they_run(
    line: str, argv: tuple[str, ...]
) -> None:
    commands = [c.argv for c in parse_command(line).commands]
    assert argv in commands, commands


@pytest.mark.parametrize(
    "line",
    [
        "$cmd x",
        '"$(echo rm)" x',
        "${X:-$(echo rm)} x",
        "source ./script.sh",
        ". ./script.sh",
        "curl https://example.invalid | sh",
        "bash < script.sh",
        "env -S 'rm x'",
        "echo 'unterminated",
    ],
)
def test_what_cannot_be_taken_apart_is_reported_not_guessed(line: str) -> None:
    assert parse_command(line).opaque, parse_command(line)


def test_output_redirects_are_writes_and_dev_null_is_not() -> None:
    parsed = parse_command("git log > out.txt 2>/dev/null; echo x >> .git/config")
    assert parsed.writes == ("out.txt", ".git/config")
    assert parse_command("ls 2>&1 >/dev/null").writes == ()


def test_a_plain_command_is_its_words_after_quote_removal() -> None:
    (command,) = parse_command("git  commit -m 'two words'").commands
    assert command.argv == ("git", "commit", "-m", "two words")
    assert command.text == "git commit -m two words"


def test_deep_nesting_of_shells_is_opaque_not_recursed_without_end() -> None:
    line = "rm x"
    for _ in range(20):
        line = "bash -c " + repr(line)
    assert parse_command(line).opaque


def test_the_parser_is_imported_on_the_first_command_not_with_the_rules() -> None:
    # The config imports the permission rules, and every command imports the config: the
    # parser's tables (a good part of a second on a busy machine) wait for a command to check.
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import orchestrator.capabilities.permissions, orchestrator.config.model\n"
        "before = 'bashlex' in sys.modules\n"
        "from orchestrator.capabilities.permissions.shell import parse_command\n"
        "parsed = parse_command('ls | wc -l')\n"
        "print(before, 'bashlex' in sys.modules, len(parsed.commands))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["False", "True", "2"]
