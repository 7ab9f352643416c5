"""The docs stay true: the CLI reference is regenerated from --help, and every doc link resolves."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_cli_reference_matches_the_commands_help() -> None:
    generator = runpy.run_path(str(REPO / "scripts" / "gen_cli_docs.py"))
    expected = generator["render"]()
    assert (REPO / "docs" / "cli.md").read_text(encoding="utf-8") == expected, (
        "docs/cli.md is out of date: run python scripts/gen_cli_docs.py"
    )


def test_every_relative_link_in_the_docs_resolves() -> None:
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
