"""Shared fixtures: the ``../shared`` material (skipped cleanly when it is absent), a small plan."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis draws its examples from a seed fixed per test, so a run (CI's on a fresh clone too)
# gives the same verdict every time; FLEETOPT_HYPOTHESIS=random, and the deep fuzz run
# (FLEETOPT_FUZZ=deep, with --hypothesis-seed to repeat one), explore new examples.
_EXPLORE = os.environ.get("FLEETOPT_HYPOTHESIS") == "random" or os.environ.get("FLEETOPT_FUZZ") == "deep"
settings.register_profile("fleetopt", derandomize=not _EXPLORE)
settings.load_profile("fleetopt")

# Output tests assume piped output with no terminal width unless they set COLUMNS themselves: a
# developer's exported COLUMNS, or pytest-xdist's workers (which set COLUMNS=80), must not leak in.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` next to the repository; tests that need it skip when it is missing."""
    if not (SHARED_DIR / "reference" / "FACTS.md").is_file():
        pytest.skip("../shared is not available")
    return SHARED_DIR


@pytest.fixture(scope="session")
def azure_plan_40(tmp_path_factory) -> Path:
    """A small two-pool plan (``plan --cdf azure --slo 1s --rate 40``), read-only: copy it to edit."""
    from typer.testing import CliRunner

    from fleetopt.cli import app

    path = tmp_path_factory.mktemp("azure-plan-40") / "plan.yaml"
    arguments = ["plan", "--cdf", "azure", "--slo", "1s", "--rate", "40", "-o", str(path)]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    return path
