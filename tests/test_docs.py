"""The docs stay true: the CLI reference is regenerated from --help, and every doc link resolves."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

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


def test_deploy_md_quotes_the_readme_plan_as_the_code_gives_it() -> None:
    """docs/deploy.md's outputs and figures of the README plan (scripts, router file, manifests,
    KEDA thresholds and headroom, the summary) are regenerated from the code: its headroom figures
    (4.7/13.1 ms) had drifted from the plan's (5.0/12.0 ms)."""
    generator = runpy.run_path(str(REPO / "scripts" / "gen_deploy_docs.py"))
    assert (REPO / "docs" / "deploy.md").read_text(encoding="utf-8") == generator["render"](fast=True), (
        "docs/deploy.md is out of date: run python scripts/gen_deploy_docs.py"
    )


@pytest.mark.slow
def test_deploy_md_scheduled_example_is_regenerated() -> None:
    """The scheduled example (a two-day log of 718,908 requests) too."""
    generator = runpy.run_path(str(REPO / "scripts" / "gen_deploy_docs.py"))
    assert (REPO / "docs" / "deploy.md").read_text(encoding="utf-8") == generator["render"](), (
        "docs/deploy.md is out of date: run python scripts/gen_deploy_docs.py"
    )
