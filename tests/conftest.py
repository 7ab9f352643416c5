"""Shared fixtures: the ``../shared`` material (skipped cleanly when it is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
