"""Markdown for pull requests and design reviews: the pieces ``fleetopt drift --format markdown``
and ``fleetopt export --to markdown`` share (tables, lists, escaping). Plain strings, no rich."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def md_cell(text: object) -> str:
    """One table cell: pipes escaped and line breaks folded, so the row stays one row."""
    return str(text).replace("|", "\\|").replace("\n", " ")


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
    """A bulleted list as lines."""
    return [f"- {item}" for item in items]
