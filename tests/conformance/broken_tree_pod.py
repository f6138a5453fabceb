"""Our pod with one sub-pod promise broken, for the tree cases' negative tests.

    python broken_tree_pod.py --fault second-child -- serve --socket ... (pod's arguments)

* ``second-child``: a ``task`` call run again (a resume) forgets its child and starts a new
  one, with a new session, instead of resuming its own;
* ``orphans``: child pods run without a supervisor, in sessions of their own, so nothing ends
  them when their parent dies.

The children themselves are real, unpatched pods (the parent starts them as ``pod serve``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any


def _second_child() -> None:
    from orchestrator.capabilities.subpods.children import Children

    original = Children.run

    async def run(self: Children, call_id: str, request: Any, partial: Any) -> Any:
        old = self.live.pop(call_id, None)
        if old is not None:
            await old.stop()
        self.records.pop(call_id, None)  # the link to its child is lost: a new child starts
        return await original(self, call_id, request, partial)

    Children.run = run  # type: ignore[method-assign]


def _orphans() -> None:
    from orchestrator.adapters.procs import Supervision
    from orchestrator.serving.pod import child_launch

    class Unsupervised(Supervision):
        """The child's own command line, with no supervisor in front of it."""

        def argv(self, command: Sequence[str], *, status_fd: int | None = None) -> list[str]:
            return list(command)

    child_launch.ChildSupervision = Unsupervised(**asdict(child_launch.ChildSupervision))


FAULTS = {"second-child": _second_child, "orphans": _orphans}


def main(argv: list[str]) -> None:
    """Apply the fault, then run ``pod`` with the rest of the arguments."""
    if len(argv) < 3 or argv[0] != "--fault" or argv[1] not in FAULTS or argv[2] != "--":
        raise SystemExit(f"usage: broken_tree_pod.py --fault {{{','.join(FAULTS)}}} -- ARGS...")
    FAULTS[argv[1]]()
    sys.argv = ["pod", *argv[3:]]
    from cli.main import main as pod

    pod()


if __name__ == "__main__":
    main(sys.argv[1:])
