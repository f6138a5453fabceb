"""Sizes the core's shaping and the config's defaults share, in a module of their own so that
reading a config does not import the history (as :mod:`orchestrator.core.tool_output` does)."""

from __future__ import annotations

__all__ = ["TOOL_OUTPUT_MAX_BYTES"]

TOOL_OUTPUT_MAX_BYTES = 16 * 1024
"""Default cap on a tool result's content and on a resolved ``@file`` body (the config's
``tool_output_max_bytes`` and ``file_ref_max_bytes`` default to it)."""
