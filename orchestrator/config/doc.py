"""The reference of ``.pod/config.toml`` keys, rendered from :class:`PodConfig` itself.

Each key's meaning is its field's docstring, so the reference cannot miss a key or describe
one that is gone; ``tests/docs/test_config_doc.py`` fails when docs/configuration.md is stale.

    python -m orchestrator.config.doc                                   # print the table
    python -m orchestrator.config.doc --write-docs docs/configuration.md  # refresh the block
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from orchestrator.config.grants import GRANTS
from orchestrator.config.model import PodConfig
from states.docblock import DocBlock

BLOCK_START = "<!-- config-keys:start -->"
BLOCK_END = "<!-- config-keys:end -->"
NOT_FILE_KEYS = frozenset({"workspace"})
"""Fields the files cannot set (the command line's workspace always wins)."""

DEFAULT_TEXT = {
    "name": "the workspace folder's name",
    "provider": "`anthropic` with `ANTHROPIC_API_KEY`, else `scripted`",
    "scripted_script": "the built-in demo",
    "session": "per command (see Meaning)",
    "socket": "`<runtime dir>/<name>.sock`",
    "memory.workspace_root": "the workspace",
}
"""Defaults that read better in words than as the field's value."""


def type_text(annotation: Any) -> str:
    """A TOML-minded name for a field's type."""
    origin = get_origin(annotation)
    if origin is Annotated:  # a constrained type: its base names it
        return type_text(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return " or ".join(type_text(arg) for arg in get_args(annotation) if arg is not type(None))
    if origin is Literal:
        return " or ".join(f'`"{value}"`' for value in get_args(annotation))
    if origin is list:
        return f"list of {type_text(get_args(annotation)[0])}s"
    if origin is dict:
        return f"table of {type_text(get_args(annotation)[1])}s"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", Path: "path"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def default_text(key: str, field: FieldInfo) -> str:
    """A field's default as it would be written in TOML."""
    if key in DEFAULT_TEXT:
        return DEFAULT_TEXT[key]
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, list):
        return "`[]`" if not value else f"`{value}`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    return f"`{value}`"


def meaning_text(field: FieldInfo) -> str:
    """A field's docstring as one Markdown line."""
    text = " ".join((field.description or "").split())
    text = text.replace("``", "`")
    return text.replace("|", "\\|")


def rows(model: type[BaseModel] = PodConfig, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, meaning) for every key the files may set, tables flattened."""
    out: list[tuple[str, str, str, str]] = []
    for name, field in model.model_fields.items():
        key = prefix + name
        if key in NOT_FILE_KEYS:
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out.extend(rows(annotation, f"{key}."))
            continue
        value = get_args(annotation)[1] if get_origin(annotation) is dict else None
        if isinstance(value, type) and issubclass(value, BaseModel):
            # A table of tables ([mcp.servers.<name>]): one row per key of an entry.
            out.extend(rows(value, f"{key}.<name>."))
            continue
        meaning = meaning_text(field)
        if key in GRANTS:
            meaning += " *A grant* (see Grants above)."
        out.append((key, type_text(annotation), default_text(key, field), meaning))
    return out


def render_table() -> str:
    """The key reference as a Markdown table."""
    lines = ["| Key | Type | Default | Meaning |", "| --- | --- | --- | --- |"]
    for key, kind, default, meaning in rows():
        lines.append(f"| `{key}` | {kind} | {default} | {meaning} |")
    return "\n".join(lines) + "\n"


DOC_BLOCK = DocBlock(
    start=BLOCK_START,
    end=BLOCK_END,
    render=render_table,
    command="python -m orchestrator.config.doc",
    what="key reference",
    doc="docs/configuration.md",
)
"""The key reference as docs/configuration.md carries it (from orchestrator/config/model.py's field
docstrings)."""


def generated_block() -> str:
    """The block docs/configuration.md carries between its markers."""
    return DOC_BLOCK.generated()


def extract_block(text: str) -> str:
    """The generated block of a document, markers included; ValueError when absent."""
    return DOC_BLOCK.extract(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table, or refresh / check the block of a Markdown document."""
    return DOC_BLOCK.main(argv, description=__doc__, printed=render_table())


if __name__ == "__main__":
    sys.exit(main())
