"""Where the bundled ``profiles/`` and ``workloads/`` folders are, installed or in a checkout."""

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
