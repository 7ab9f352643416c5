"""Markdown for pull requests and design reviews: the pieces ``fleetopt drift --format markdown``
and ``fleetopt export --to markdown`` share (tables, lists, escaping). Plain strings, no rich."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from fleetopt.errors import printable

#: Characters that make markdown or HTML out of text (emphasis, code, links and images, tags,
#: strike-through, headings); a backslash before any of them makes it a plain character.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]<>~#])")


def md_text(text: object) -> str:
    """Text that came from a user or a file (a workload path, a profile name, a plan field), as
    plain inline markdown: on one line (line breaks and control characters escaped,
    fleetopt.errors.printable) and with markdown's and HTML's punctuation backslash-escaped, so
    it can start no block and make no link, image, tag or emphasis. Table cells: :func:`md_cell`."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", printable(str(text)))


def md_cell(text: object) -> str:
    """One table cell: pipes escaped and line breaks folded (other control characters escaped),
    so the row stays one row."""
    return printable(str(text).replace("\n", " ")).replace("|", "\\|")


def md_code(text: str) -> str:
    """``text`` as an inline code span: fenced with one more backtick than its longest run of them
    (CommonMark), on one line."""
    text = printable(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> list[str]:
    """A GitHub-flavoured markdown table as lines; ``align`` has one letter per column:
    ``l`` left, ``r`` right (default: the first column left, the others right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = {"l": "---", "r": "--:"}
    lines = [
        "| " + " | ".join(md_cell(h) for h in headers) + " |",
        "|" + "|".join(rule[a] for a in align) + "|",
    ]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines


def md_bullets(items: Iterable[str]) -> list[str]:
    """A bulleted list as lines (each item on one line: line breaks escaped)."""
    return [f"- {printable(item)}" for item in items]
