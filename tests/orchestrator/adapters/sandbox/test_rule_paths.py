"""Deny rules expanded against a real workspace: what the sandbox hides or makes read-only."""

from __future__ import annotations

from pathlib import Path

from orchestrator.adapters.sandbox.rule_paths import deny_paths, path_rules
from orchestrator.capabilities.permissions.rules import Rule


def _rules(*texts: str) -> list[Rule]:
    return [Rule.parse(t) for t in texts]


def test_read_and_write_rules_become_hidden_and_read_only_paths(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for folder in (ws / "secrets" / "deep", ws / "app" / "secrets", ws / "certs", ws / "locked"):
        folder.mkdir(parents=True)
    for file in (ws / ".env", ws / "app" / ".env", ws / "certs" / "a.pem", ws / "b.pem"):
        file.write_text("x\n")
    (ws / "link.env").symlink_to(tmp_path)
    rules = path_rules(
        _rules(
            "read(.env)",
            "read(secrets/**)",  # anchored: app/secrets is not covered, as for read_file
            "read_file(*.pem)",
            "read(link.env)",
            "write(locked/**)",
            "edit(.env)",
            "bash(rm:*)",  # about commands, not paths
            "read",  # denies the tool outright: no path
        )
    )
    assert rules.read == (".env", "secrets/**", "*.pem", "link.env")
    assert rules.write == ("locked/**", ".env")
    found = deny_paths(rules, ws)
    assert found.complete
    assert sorted(found.hidden) == sorted(
        [ws / ".env", ws / "app" / ".env", ws / "secrets", ws / "certs" / "a.pem", ws / "b.pem",
         tmp_path]  # a covered link stands for its target
    )  # fmt: skip
    assert found.read_only == (ws / "locked",)  # .env is hidden already: not looked into


def test_an_absolute_pattern_and_the_walks_bound(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keys").mkdir(parents=True)
    (outside / "keys" / "k.pem").write_text("x\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(30):
        (ws / f"f{n}").write_text("x\n")
    found = deny_paths(path_rules(_rules(f"read(/{outside}/**/*.pem)", "read(.env)")), ws)
    assert found.hidden == (outside / "keys" / "k.pem",)
    assert not deny_paths(path_rules(_rules("read(.env)")), ws, max_entries=10).complete
    assert deny_paths(path_rules(_rules("bash")), ws).hidden == ()


def test_an_absolute_pattern_s_walk_is_bounded_too(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for n in range(30):
        (outside / f"f{n}").write_text("x\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    rules = path_rules(_rules(f"read(/{outside}/**/*.pem)"))
    assert deny_paths(rules, ws).complete
    assert not deny_paths(rules, ws, max_entries=10).complete
