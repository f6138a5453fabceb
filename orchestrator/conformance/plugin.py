"""pytest plugin (entry point ``pytest11``): options for the pod conformance kit.

Inactive unless ``--pod-command`` is given, so installing the package changes nothing for
other test suites.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the conformance kit's options."""
    group = parser.getgroup("pod-conformance", "pod protocol conformance kit")
    group.addoption(
        "--pod-command",
        default=None,
        help="Command that starts the pod under test; {socket} and {base_url} are filled in.",
    )
