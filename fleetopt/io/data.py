"""Where the bundled ``profiles/`` and ``workloads/`` folders are, installed or in a checkout, and
the profile search path."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def bundled_dir(kind: str) -> Path:
    """The bundled data folder ``kind`` (``profiles`` or ``workloads``).

    A wheel carries it as ``fleetopt/_data/<kind>``; an editable install or a source
    checkout uses the top-level folder of the repository.
    """
    installed = _PACKAGE_DIR / "_data" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / kind


def profile_search_path(profiles_dir: Path | None) -> tuple[Path, ...]:
    """The user's profile folder (if any) before the bundled one."""
    return ((Path(profiles_dir),) if profiles_dir is not None else ()) + (bundled_dir("profiles"),)
