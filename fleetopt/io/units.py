"""Parsing of human-facing quantities into fleetopt's internal units (seconds, fractions, req/s),
and the numbers fleetopt shows people (``fmt_*``: tables, and the sentences documents carry).

Every dimensional value inside fleetopt is in seconds, bytes or tokens; conversions happen
here, at the edge, and nowhere else.
"""

from __future__ import annotations

import math
import re

from fleetopt.errors import ValidationError, excerpt

_DURATION_UNITS_S = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_DURATION_RE = re.compile(rf"^\s*({_NUMBER})\s*(us|µs|ms|s|min|h|d)\s*$")


def parse_duration_s(text: str, *, field: str = "duration") -> float:
    """Parse ``500ms``, ``0.5s``, ``2min`` into seconds. A bare number is refused (ambiguous)."""
    match = _DURATION_RE.match(str(text))
    if not match:
        raise ValidationError(
            f"{field}: {excerpt(text)} is not a duration; write a number with a unit, e.g. 500ms or 0.5s "
            f"(units: {', '.join(_DURATION_UNITS_S)})"
        )
    value_s = float(match.group(1)) * _DURATION_UNITS_S[match.group(2)]
    if not math.isfinite(value_s) or value_s <= 0:
        raise ValidationError(f"{field}: {excerpt(text)} must be a positive, finite duration")
    return value_s


def parse_fraction(text: str, *, field: str = "fraction", allow_above_one: bool = False) -> float:
    """Parse ``10%`` or ``0.1`` into the fraction 0.1."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValidationError(
            f"{field}: {excerpt(text)} is not a number or percentage (e.g. 10% or 0.1)"
        ) from None
    upper = math.inf if allow_above_one else 1.0
    if not (0.0 <= value <= upper) or not math.isfinite(value):
        allowed = "≥ 0" if allow_above_one else "in [0, 1] (0% to 100%)"
        raise ValidationError(f"{field}: {excerpt(text)} must be {allowed}")
    return value


def parse_number_list(text: str, *, field: str, integer: bool = False) -> list[float]:
    """Parse a comma-separated list such as ``4096,8192`` or ``1.0,1.5``."""
    values: list[float] = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            value = float(part)
        except ValueError:
            raise ValidationError(f"{field}: {excerpt(part)} in {excerpt(text)} is not a number") from None
        if integer and value != int(value):
            raise ValidationError(f"{field}: {excerpt(part)} in {excerpt(text)} must be a whole number")
        values.append(int(value) if integer else value)
    return values


# -- numbers for people ---------------------------------------------------------------------------

#: What every table prints for an empty, unknown or not-applicable value (never ∞, −∞ or NaN).
NOT_APPLICABLE = "–"


def fmt_num(value: float | int | None, digits: int = 4) -> str:
    """A compact human form of a number: ``None`` as ``–``, thousands separators for big ints."""
    if value is None:
        return NOT_APPLICABLE
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return NOT_APPLICABLE
    if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-4):
        return f"{value:.{digits}g}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def fmt_seconds(value_s: float | None) -> str:
    """Seconds shown in ms below 1 s (e.g. ``412.3 ms``), in s above."""
    if value_s is None or not math.isfinite(value_s):
        return NOT_APPLICABLE
    if abs(value_s) < 1.0:
        return f"{value_s * 1e3:.1f} ms"
    return f"{value_s:.3f} s"


def fmt_usd(value: float | None) -> str:
    """Dollars for people: ``$20.75M``, ``$309.8K``, ``$950``; ``–`` for None or non-finite."""
    if value is None or not math.isfinite(value):
        return NOT_APPLICABLE
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{sign}${magnitude / 1e6:,.2f}M"
    if magnitude >= 1e3:
        return f"{sign}${magnitude / 1e3:,.1f}K"
    return f"{sign}${magnitude:,.0f}"


def fmt_pct(value: float | None, signed: bool = False) -> str:
    """A fraction as a percentage with one decimal (``0.371`` → ``37.1%``); ``–`` for None/non-finite."""
    if value is None or not math.isfinite(value):
        return NOT_APPLICABLE
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def fmt_count(value: float | None) -> str:
    """A count, whole numbers without decimals and fractional ones (Eq. 8 instances) with one."""
    if value is None or not math.isfinite(value):
        return NOT_APPLICABLE
    return f"{value:,.0f}" if abs(value - round(value)) < 1e-9 else f"{value:,.1f}"
