"""`fleetopt queue` (not implemented yet)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to ``app``."""
