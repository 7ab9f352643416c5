"""Reading a text file with one error message per way it can fail (every reader names the file)."""

from __future__ import annotations

from pathlib import Path

from fleetopt.errors import ValidationError


def read_text(path: Path, label: str = "") -> str:
    """The file's text (UTF-8, a BOM dropped); ValidationError naming ``label`` + the path when it is
    missing, unreadable or not UTF-8."""
    where = f"{label}{path}"
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ValidationError(f"{where}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{where}: not UTF-8 text (byte {exc.start:,}); save it as UTF-8") from None
    except OSError as exc:
        raise ValidationError(f"{where}: cannot be read ({exc.strerror or exc})") from None
