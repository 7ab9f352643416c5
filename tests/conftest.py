"""Shared fixtures: the ``../shared`` material (skipped cleanly when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` next to the repository; tests that need it skip when it is missing."""
    if not (SHARED_DIR / "reference" / "FACTS.md").is_file():
        pytest.skip("../shared is not available")
    return SHARED_DIR
