"""The shared library on disk: the folders of skills, custom commands and agent files, and
reading their files safely (docs/skills.md).

:mod:`.dirs` says which folders a kind is looked up in, in order; :mod:`.reader` lists them
and reads their files, refusing what a hostile repository could plant. The pure parts
(names, frontmatter, first-wins resolution, the refusal) are :mod:`orchestrator.core.library`.
"""

from __future__ import annotations

from orchestrator.adapters.library.dirs import LibraryDir, library_dirs
from orchestrator.adapters.library.reader import (
    FILE_MAX_BYTES,
    LIST_MAX,
    Child,
    Listing,
    list_children,
    read_library_text,
    resolve_inside,
)
from orchestrator.core.library import (
    Kind,
    LibraryRefused,
    Origin,
    Resolved,
    check_name,
    list_field,
    name_problem,
    resolve,
    split_frontmatter,
    text_field,
)

__all__ = [
    "FILE_MAX_BYTES",
    "LIST_MAX",
    "Child",
    "Kind",
    "LibraryDir",
    "LibraryRefused",
    "Listing",
    "Origin",
    "Resolved",
    "check_name",
    "library_dirs",
    "list_children",
    "list_field",
    "name_problem",
    "read_library_text",
    "resolve",
    "resolve_inside",
    "split_frontmatter",
    "text_field",
]
