"""The pod conformance kit: checks any pod, in any language, against the lifecycle table.

It sits beside :mod:`cli`, above the runtime: it may use :mod:`orchestrator` and
:mod:`states`, and neither of them ever imports it (``tests/test_exported_members.py``
checks). :mod:`conformance.cases` turns the transition table into cases,
:mod:`conformance.driver` runs them against a pod over its socket, and
:mod:`conformance.fake_api` is the fake Anthropic Messages API each pod talks to; the
pytest plugin is :mod:`conformance.plugin`. Import from the submodules; this package imports
nothing at load time so that light commands stay light.
"""

from __future__ import annotations

__all__ = ["fake_api"]
