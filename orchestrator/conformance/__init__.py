"""Conformance tooling: a fake Anthropic Messages API to test pods against, in any language.

:mod:`orchestrator.conformance.fake_api` serves real HTTP + SSE on 127.0.0.1, validates every
request like the real API, records what it received and answers from a script of steps
(:class:`~orchestrator.conformance.fake_api.Reply`, ``Fault``, ``Drop``, ``StreamError``,
``Hang``). Import it from the submodule; this package imports nothing at load time so that
light commands stay light.
"""

from __future__ import annotations

__all__ = ["fake_api"]
