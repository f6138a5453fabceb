"""``.gitignore`` rules, parsed once and matched against listed paths."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.core.globs import compile_glob
from orchestrator.core.safe_regex import PatternError, WholeMatchSet


@dataclass(frozen=True)
class _IgnoreRule:
    source: str
    """The rule's regex (from :func:`glob_regex`), matched against a whole subject."""
    negate: bool
    dir_only: bool
    anchored: bool


class IgnoreRules:
    """Parsed ``.gitignore`` rules; the last rule that matches a path decides.

    The rules are matched with RE2 sets, one call per subject for all rules: the file is the
    workspace's (or the model's, through write_file), so a rule must not be able to freeze the
    pod by backtracking, and it is checked for every path a walk lists.
    """

    def __init__(self, rules: Sequence[_IgnoreRule] = ()) -> None:
        self._rules = list(rules)
        self._by_name = [i for i, rule in enumerate(self._rules) if not rule.anchored]
        self._by_path = [i for i, rule in enumerate(self._rules) if rule.anchored]
        self._names = WholeMatchSet([self._rules[i].source for i in self._by_name])
        self._paths = WholeMatchSet([self._rules[i].source for i in self._by_path])

    def __len__(self) -> int:
        return len(self._rules)

    def last_match(self, name: str, rel: str, is_dir: bool) -> _IgnoreRule | None:
        """The last rule matching an entry (``name``, workspace-relative ``rel``), if any."""
        hits = [self._by_name[i] for i in self._names.matching(name)]
        hits += [self._by_path[i] for i in self._paths.matching(rel)]
        hits = [i for i in hits if is_dir or not self._rules[i].dir_only]
        return self._rules[max(hits)] if hits else None


def parse_gitignore(text: str) -> IgnoreRules:
    """The rules of a ``.gitignore`` file (a practical subset: globs, ``!``, ``/``, ``**``).

    A line that is not a valid pattern is skipped, as git does, instead of breaking every
    listing.
    """
    rules: list[_IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        # A slash anywhere but at the end anchors the pattern to the workspace root.
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        try:
            compiled = compile_glob(line)
        except PatternError:
            continue
        rules.append(_IgnoreRule(compiled.source, negate, dir_only, anchored))
    try:
        return IgnoreRules(rules)
    except PatternError:
        # Too many rules for RE2's memory budget (the file is capped at 256 KiB): show
        # everything rather than fail every listing.
        return IgnoreRules()


def is_ignored(rules: IgnoreRules, parts: Sequence[str], is_dir: bool) -> bool:
    """Whether a workspace-relative path is ignored; an ignored directory hides its contents."""
    for depth in range(1, len(parts) + 1):
        prefix_is_dir = depth < len(parts) or is_dir
        rule = rules.last_match(parts[depth - 1], "/".join(parts[:depth]), prefix_is_dir)
        if rule is not None and not rule.negate:
            return True
    return False
