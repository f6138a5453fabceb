"""Knowledge records against real files: collector, search, read and every lint rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.capabilities.knowledge import (
    DESCRIPTION_MAX_CHARS,
    RECORD_MAX_BYTES,
    KnowledgeError,
    KnowledgeFrontmatter,
    KnowledgeRecord,
    LintIssue,
    ResidentEntry,
    ResidentKnowledge,
    SearchHit,
    collect_resident_knowledge,
    fold_lines,
    lint_knowledge,
    load_record,
    memory_fs,
    read_memory,
    search_knowledge,
    slug_problem,
)


def write(root: Path, name: str, text: str) -> Path:
    path = root / "knowledge" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def record(description: str, *, invoke: str | None = None, body: str = "Body.\n") -> str:
    flag = "" if invoke is None else f"model_invokation: {invoke}\n"
    return f"---\ndescription: {description}\n{flag}---\n{body}"


def lint_of(root: Path, name: str, text: str) -> list[LintIssue]:
    write(root, name, text)
    return lint_knowledge(root)


# -- collector ----------------------------------------------------------------------------------


def test_collector_takes_only_true_records_in_slug_order(tmp_path: Path) -> None:
    write(tmp_path, "zeta.md", record("Last by slug.", invoke="true"))
    write(tmp_path, "alpha.md", record("First by slug.", invoke="true"))
    write(tmp_path, "off.md", record("Explicitly off.", invoke="false"))
    write(tmp_path, "unset.md", record("No flag at all."))
    write(tmp_path, "notes.txt", "not a record")
    (tmp_path / "knowledge" / "dir.md").mkdir()

    found = collect_resident_knowledge(memory_fs(tmp_path), tmp_path)

    assert found == ResidentKnowledge(
        entries=[
            ResidentEntry("alpha", "First by slug."),
            ResidentEntry("zeta", "Last by slug."),
        ],
        skipped=[],
    )


def test_collector_folds_newlines_and_carriage_returns(tmp_path: Path) -> None:
    write(tmp_path, "multi.md", record('"one\\ntwo\\r\\nthree  \\n  four\\r"', invoke="true"))
    write(
        tmp_path,
        "block.md",
        "---\ndescription: |\n  first line\n  second line\nmodel_invokation: true\n---\n",
    )

    found = collect_resident_knowledge(memory_fs(tmp_path), tmp_path)

    assert found.entries == [
        ResidentEntry("block", "first line second line"),
        ResidentEntry("multi", "one two three four"),
    ]


def test_collector_skips_bad_files_and_reports_them(tmp_path: Path) -> None:
    write(tmp_path, "good.md", record("Fine.", invoke="true"))
    bad_yaml = write(tmp_path, "bad-yaml.md", "---\ndescription: [unclosed\n---\n")
    no_front = write(tmp_path, "plain.md", "Just text.\n")
    bad_flag = write(tmp_path, "flag.md", record("Quoted flag.", invoke='"true"'))

    found = collect_resident_knowledge(memory_fs(tmp_path), tmp_path)

    assert found.entries == [ResidentEntry("good", "Fine.")]
    assert [(issue.path, issue.severity) for issue in found.skipped] == [
        (bad_yaml, "error"),
        (bad_flag, "error"),
        (no_front, "error"),
    ]
    assert found.skipped[1].message == "model_invokation must be true or false, got str 'true'"
    assert found.skipped[2] == LintIssue(
        no_front, 1, "error", "missing frontmatter: the file must start with a '---' line"
    )


def test_collector_without_knowledge_folder_finds_nothing(tmp_path: Path) -> None:
    assert collect_resident_knowledge(memory_fs(tmp_path), tmp_path) == ResidentKnowledge()


def test_collector_refuses_symlinks_that_leave_the_memory_root(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    outside = tmp_path / "outside.md"
    outside.write_text(record("Smuggled in.", invoke="true"), encoding="utf-8")
    write(root, "inside.md", record("Kept.", invoke="true"))
    escape = root / "knowledge" / "escape.md"
    escape.symlink_to(outside)

    found = collect_resident_knowledge(memory_fs(root), root)

    assert found == ResidentKnowledge(
        [ResidentEntry("inside", "Kept.")],
        [
            LintIssue(
                escape,
                None,
                "error",
                f"cannot read: symlink points outside the allowed roots, to {outside.resolve()}",
            )
        ],
    )


def test_collector_sees_git_ignored_and_skips_hidden_files(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("knowledge/\n*.md\n", encoding="utf-8")
    write(tmp_path, "private.md", record("Still resident.", invoke="true"))
    write(tmp_path, ".draft.md", record("Hidden.", invoke="true"))

    found = collect_resident_knowledge(memory_fs(tmp_path), tmp_path)

    assert found == ResidentKnowledge([ResidentEntry("private", "Still resident.")], [])


def test_collector_reports_a_knowledge_file_that_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "knowledge").write_text("oops", encoding="utf-8")

    found = collect_resident_knowledge(memory_fs(tmp_path), tmp_path)

    assert found.entries == []
    assert [issue.message for issue in found.skipped] == ["cannot list knowledge/: not a directory"]


# -- load_record --------------------------------------------------------------------------------


def test_load_record_parses_frontmatter_and_strips_body(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "deploy-steps.md",
        "---\ndescription: How to deploy.\nmodel_invokation: true\ntitle: Deploying\n"
        "tags: [ops, release]\n---\n\n\n# Steps\n\n1. Build\n\n",
    )

    loaded = load_record(memory_fs(tmp_path), path)

    assert loaded == KnowledgeRecord(
        slug="deploy-steps",
        path=path,
        frontmatter=KnowledgeFrontmatter(
            description="How to deploy.",
            model_invokation=True,
            title="Deploying",
            tags=["ops", "release"],
        ),
        body="# Steps\n\n1. Build",
    )


def test_load_record_raises_with_the_first_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.md", "---\ntitle: No description\n---\n")

    with pytest.raises(KnowledgeError, match="description is required") as info:
        load_record(memory_fs(tmp_path), path)
    assert info.value.path == path


# -- search -------------------------------------------------------------------------------------


def test_search_ranks_slug_over_description_over_body(tmp_path: Path) -> None:
    write(tmp_path, "deploy.md", record("Release checklist."))
    write(tmp_path, "ops.md", record("How we DEPLOY services."))
    write(tmp_path, "misc.md", record("Unrelated.", body="Mentions deploy once.\n"))
    write(tmp_path, "other.md", record("Nothing to see."))

    hits = search_knowledge(memory_fs(tmp_path), tmp_path, "Deploy")

    assert hits == [
        SearchHit("deploy", "Release checklist.", 3, False),
        SearchHit("ops", "How we DEPLOY services.", 2, False),
        SearchHit("misc", "Unrelated.", 1, False),
    ]


def test_search_prefers_records_matching_more_terms(tmp_path: Path) -> None:
    write(tmp_path, "python.md", record("Python tips."))
    write(tmp_path, "testing.md", record("Testing with pytest in python.", invoke="true"))

    hits = search_knowledge(memory_fs(tmp_path), tmp_path, "python pytest")

    assert [(hit.slug, hit.resident) for hit in hits] == [("testing", True), ("python", False)]


def test_search_matches_title_and_tags_and_honours_limit(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "---\ndescription: A.\ntags: [kubernetes]\n---\n")
    write(tmp_path, "b.md", "---\ndescription: B.\ntitle: Kubernetes notes\n---\n")

    hits = search_knowledge(memory_fs(tmp_path), tmp_path, "kubernetes", limit=1)

    assert [hit.slug for hit in hits] == ["a"]


def test_search_skips_bad_files_and_rejects_empty_queries(tmp_path: Path) -> None:
    write(tmp_path, "broken.md", "deploy without frontmatter\n")
    fs = memory_fs(tmp_path)

    assert search_knowledge(fs, tmp_path, "deploy") == []
    with pytest.raises(KnowledgeError, match="empty"):
        search_knowledge(fs, tmp_path, "   ")
    with pytest.raises(KnowledgeError, match="at least 1"):
        search_knowledge(fs, tmp_path, "deploy", limit=0)


# -- read_memory --------------------------------------------------------------------------------


def test_read_memory_returns_the_body(tmp_path: Path) -> None:
    write(tmp_path, "howto.md", record("How.", body="\nStep one.\nStep two.\n"))

    assert read_memory(memory_fs(tmp_path), tmp_path, "howto") == "Step one.\nStep two."


def test_read_memory_unknown_slug_suggests_close_names(tmp_path: Path) -> None:
    write(tmp_path, "release-steps.md", record("Steps."))

    with pytest.raises(KnowledgeError) as info:
        read_memory(memory_fs(tmp_path), tmp_path, "release-step")
    assert str(info.value) == "no knowledge record 'release-step'; similar: release-steps"


@pytest.mark.parametrize("slug", ["../secret", "Upper", "a/b", ""])
def test_read_memory_rejects_slugs_that_are_not_names(tmp_path: Path, slug: str) -> None:
    (tmp_path / "secret.md").write_text(record("Outside knowledge/."), encoding="utf-8")

    with pytest.raises(KnowledgeError, match="slug"):
        read_memory(memory_fs(tmp_path), tmp_path, slug)


def test_read_memory_of_a_bad_record_says_why(tmp_path: Path) -> None:
    write(tmp_path, "bad.md", "---\ndescription: ''\n---\nbody\n")

    with pytest.raises(KnowledgeError, match="description is empty"):
        read_memory(memory_fs(tmp_path), tmp_path, "bad")


# -- slugs and folding --------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["a", "0-start", "snake_case", "kebab-case-2", "x" * 64])
def test_valid_slugs(slug: str) -> None:
    assert slug_problem(slug) is None


@pytest.mark.parametrize("slug", ["", "-lead", "_lead", "Upper", "has space", "dot.ted", "x" * 65])
def test_invalid_slugs(slug: str) -> None:
    assert slug_problem(slug) is not None


def test_fold_lines() -> None:
    assert fold_lines("  a\r\nb \n\n c\rd  ") == "a b c d"


# -- lint ---------------------------------------------------------------------------------------


def test_lint_clean_records_and_missing_folder_report_nothing(tmp_path: Path) -> None:
    assert lint_knowledge(tmp_path) == []
    write(tmp_path, "ok.md", record("Fine.", invoke="true"))
    write(tmp_path, "max.md", record("x" * DESCRIPTION_MAX_CHARS))
    assert lint_knowledge(tmp_path) == []


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("No frontmatter.\n", 1, "missing frontmatter: the file must start with a '---' line"),
        (
            "---\ndescription: never closed\n",
            1,
            "frontmatter is not closed: no '---' line after the opening one",
        ),
        ("---\n---\nbody\n", 1, "frontmatter is empty: description is required"),
        ("---\n- a\n- b\n---\n", 1, "frontmatter must be a mapping of keys, got list"),
        ("---\ntitle: T\n---\n", None, "description is required"),
        ("---\ndescription:\n---\n", 2, "description is empty"),
        ("---\ndescription: '   '\n---\n", 2, "description is empty"),
        (
            "---\ntitle: T\ndescription: 2024-01-02\n---\n",
            3,
            "description must be a string, got date datetime.date(2024, 1, 2) (quote it)",
        ),
        (
            f"---\ndescription: {'d' * (DESCRIPTION_MAX_CHARS + 1)}\n---\n",
            2,
            f"description is {DESCRIPTION_MAX_CHARS + 1} characters; "
            f"the limit is {DESCRIPTION_MAX_CHARS}",
        ),
        (
            "---\ndescription: D\nmodel_invokation: 'true'\n---\n",
            3,
            "model_invokation must be true or false, got str 'true'",
        ),
        (
            "---\ndescription: D\nmodel_invokation: 1\n---\n",
            3,
            "model_invokation must be true or false, got int 1",
        ),
        ("---\ndescription: D\ntitle: [a]\n---\n", 3, "title must be a string, got list ['a']"),
        ("---\ndescription: D\ntags: solo\n---\n", 3, "tags must be a list of strings"),
    ],
)
def test_lint_frontmatter_errors(tmp_path: Path, text: str, line: int | None, message: str) -> None:
    path = tmp_path / "knowledge" / "rec.md"

    assert lint_of(tmp_path, "rec.md", text) == [LintIssue(path, line, "error", message)]


def test_lint_bad_yaml_points_at_the_line(tmp_path: Path) -> None:
    issues = lint_of(tmp_path, "rec.md", "---\ndescription: ok\ntags: [a, b\n  c: d\n---\n")

    assert len(issues) == 1
    assert issues[0].line == 4
    assert issues[0].message.startswith("invalid YAML in frontmatter: ")


def test_lint_unknown_keys_are_warnings_with_a_hint(tmp_path: Path) -> None:
    path = tmp_path / "knowledge" / "rec.md"
    text = "---\ndescription: D\nmodel_invocation: true\nowner: me\n---\n"

    assert lint_of(tmp_path, "rec.md", text) == [
        LintIssue(
            path,
            3,
            "warning",
            "unknown frontmatter key 'model_invocation' (did you mean 'model_invokation'?)",
        ),
        LintIssue(path, 4, "warning", "unknown frontmatter key 'owner'"),
    ]


def test_lint_bad_slug_is_reported_with_content_problems(tmp_path: Path) -> None:
    path = tmp_path / "knowledge" / "Bad Name.md"

    assert lint_of(tmp_path, "Bad Name.md", "---\ntitle: T\n---\n") == [
        LintIssue(
            path,
            None,
            "error",
            "slug 'Bad Name' is invalid: use lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit",
        ),
        LintIssue(path, None, "error", "description is required"),
    ]


def test_lint_too_long_slug(tmp_path: Path) -> None:
    name = "s" * 65

    assert [issue.message for issue in lint_of(tmp_path, f"{name}.md", record("D."))] == [
        f"slug {name!r} is 65 characters; the limit is 64"
    ]


def test_lint_duplicate_slugs_ignore_case(tmp_path: Path) -> None:
    write(tmp_path, "Notes.md", record("Upper."))
    write(tmp_path, "notes.md", record("Lower."))
    upper = tmp_path / "knowledge" / "Notes.md"
    lower = tmp_path / "knowledge" / "notes.md"
    if upper.samefile(lower):
        pytest.skip("case-insensitive file system")

    assert [(issue.path, issue.message) for issue in lint_knowledge(tmp_path)] == [
        (
            upper,
            "slug 'Notes' is invalid: use lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit",
        ),
        (lower, "duplicate slug 'notes': also Notes.md (slugs ignore case)"),
    ]


def test_lint_unreadable_and_oversized_files(tmp_path: Path) -> None:
    binary = tmp_path / "knowledge" / "binary.md"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"---\ndescription: \xff\xfe\n---\n")
    big = write(tmp_path, "big.md", record("Big.", body="x" * RECORD_MAX_BYTES))

    issues = lint_knowledge(tmp_path)

    assert issues == [
        LintIssue(
            big,
            None,
            "error",
            f"file is {big.stat().st_size} bytes; records are limited to {RECORD_MAX_BYTES}",
        ),
        LintIssue(binary, None, "error", "cannot read: binary file (not UTF-8 text)"),
    ]


def test_lint_issue_location_is_relative_to_the_root(tmp_path: Path) -> None:
    issue = LintIssue(tmp_path / "knowledge" / "a.md", 3, "error", "m")

    assert issue.location(tmp_path) == "knowledge/a.md:3"
    assert issue.shown_path(tmp_path / "elsewhere") == str(tmp_path / "knowledge" / "a.md")


def test_the_yaml_parser_loads_with_the_first_record_only() -> None:
    # Every pod imports the knowledge package (its system prompt lists the records); the
    # YAML parser is paid for by a workspace that has records, when one is read.
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import orchestrator.capabilities.knowledge, orchestrator.runtime.system_prompt\n"
        "print('yaml' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"]
