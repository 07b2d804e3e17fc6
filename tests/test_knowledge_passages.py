"""Splitting runbooks into passages: heading paths, line ranges, fences, long sections."""

from __future__ import annotations

import itertools

from youyou.adapters.knowledge.passages import MAX_PASSAGE_CHARS, is_markdown, split_passages

RUNBOOK = """\
Owned by the database team.

# Database

## Failover
When the primary is down:

1. Promote the replica.
```bash
# not a heading: a comment in a fenced block
pg_ctl promote
```
### Verify ###
Check replication lag.

## Empty section

# 备份
每天凌晨三点执行全量备份。
"""


def test_each_heading_section_is_a_passage_with_its_path_and_lines() -> None:
    found = [(p.headings, p.line_start, p.line_end) for p in split_passages(RUNBOOK)]
    assert found == [
        ((), 1, 1),
        (("Database", "Failover"), 5, 12),
        (("Database", "Failover", "Verify"), 13, 14),
        (("备份",), 18, 19),
    ]
    failover = split_passages(RUNBOOK)[1]
    assert failover.text.startswith("## Failover\nWhen the primary is down:\n\n1. Promote")
    assert "# not a heading" in failover.text and failover.text.endswith("```")
    lines = RUNBOOK.splitlines()
    for passage in split_passages(RUNBOOK):  # the range is exactly where the text is
        assert passage.text == "\n".join(lines[passage.line_start - 1 : passage.line_end])


def test_a_bare_heading_gives_no_passage_but_names_its_children() -> None:
    (only,) = split_passages("# Title\n\n## Part\n\ntext\n")
    assert (only.headings, only.line_start, only.line_end) == (("Title", "Part"), 3, 5)
    assert only.text == "## Part\n\ntext"


def test_plain_text_has_no_headings_and_hashes_are_text() -> None:
    assert is_markdown("runbooks/db.md") and is_markdown("notes") and is_markdown("a.b/notes")
    assert not is_markdown("ops/restart.txt")
    (passage,) = split_passages("# restart nginx\nsystemctl restart nginx\n", markdown=False)
    assert (passage.headings, passage.line_start, passage.line_end) == ((), 1, 2)
    assert split_passages("#hashtag is not a heading\n")[0].headings == ()


def test_a_long_section_is_cut_at_blank_lines_and_keeps_its_heading_path() -> None:
    paragraph = ("word " * 60).strip()  # about 300 characters
    body = "\n\n".join(f"{i} {paragraph}" for i in range(30))
    pieces = split_passages(f"# Big\n{body}\n")
    assert len(pieces) > 1
    assert all(len(p.text) <= MAX_PASSAGE_CHARS and p.headings == ("Big",) for p in pieces)
    assert pieces[0].line_start == 1 and pieces[-1].line_end == 60
    for before, after in itertools.pairwise(pieces):
        assert after.line_start > before.line_end
    one_line = "x" * 100
    long_paragraph = "\n".join([one_line] * 60)  # no blank line at all: cut at line ends
    cut = split_passages(long_paragraph, markdown=False)
    assert len(cut) > 1 and cut[1].line_start == cut[0].line_end + 1


def test_a_line_longer_than_a_passage_is_cut_at_spaces_and_each_piece_cites_it() -> None:
    """A paragraph pasted as one line (a minified log): a single passage of it could not be
    indexed (PostgreSQL's full-text vectors stop at 1 MB) and would flood the model."""
    words = [f"w{i}" for i in range(100_000)]
    line = " ".join(words)
    pieces = split_passages(f"# Log\n{line}\nafter\n")
    assert len(pieces) > 100
    assert all(len(p.text) <= MAX_PASSAGE_CHARS for p in pieces)
    assert all((p.line_start, p.line_end) == (2, 2) for p in pieces[:-1])
    assert pieces[-1].line_end == 3 and pieces[-1].text.endswith("\nafter")
    # cut between words only, nothing lost
    assert " ".join(p.text for p in pieces).split() == [*words, "after"]
    unbroken = split_passages("y" * (3 * MAX_PASSAGE_CHARS), markdown=False)
    assert [len(p.text) for p in unbroken] == [MAX_PASSAGE_CHARS] * 3
