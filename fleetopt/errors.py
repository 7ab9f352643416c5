"""The one error family of fleetopt, and the one way an error shows a user's value.

Every error a user can cause by bad input is a :class:`FleetoptError`; the CLI turns it
into ``Error: <message>`` on stderr and exit status 1. Messages name the file, the field,
the value and what is allowed, wherever those exist. A value that came from the user (a field
of a file, a column name, an option) is shown with :func:`excerpt`: quoted, its control
characters, terminal escapes and line separators escaped, and at most a bounded length — so a
message can neither run to megabytes nor drive the terminal. :func:`printable` is the same
escaping without quotes or a bound (the CLI applies it to every message it prints).
"""

from __future__ import annotations

import reprlib
from typing import Any

#: The most characters :func:`excerpt` shows of one string (a long path fits; a value of megabytes
#: does not).
EXCERPT_CHARS = 200


class FleetoptError(Exception):
    """Base class of every error caused by the user's input or environment."""


class ValidationError(FleetoptError):
    """A value, file or field is outside what fleetopt accepts."""


class NotFoundError(FleetoptError):
    """A named profile, workload or file does not exist."""


class InfeasibleError(FleetoptError):
    """No fleet can meet the stated constraints (raised only where a typed result is not possible)."""


def printable(text: str) -> str:
    """``text`` with every character that is not printable escaped as Python writes it (``\\n``,
    ``\\x1b``, ``\\u2028``): control characters, ANSI escape sequences (their ESC), line and
    paragraph separators, NEL and format characters can no longer break a line or reach a
    terminal raw. Printable text (any script, spaces) is unchanged."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


class _BoundedRepr(reprlib.Repr):
    """reprlib with small limits: a nested value is shown by its first few items and levels, so
    showing it costs little however large it is."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 2
        self.maxlist = self.maxtuple = self.maxset = self.maxdict = 6
        self.maxstring = EXCERPT_CHARS
        self.maxlong = 40
        self.maxother = EXCERPT_CHARS

    def repr_str(self, value: str, level: int) -> str:
        if len(value) <= self.maxstring:
            return repr(value)
        head = value[: self.maxstring * 2 // 3]
        tail = value[-(self.maxstring // 6) :]
        return f"{head!r}…{tail!r} ({len(value):,} characters)"


_REPR = _BoundedRepr()


def excerpt(value: Any) -> str:
    """A user's value as an error message shows it: its repr (strings quoted, with control
    characters, ANSI escapes and line separators escaped), a long string cut in the middle with
    its length, a nested value by its first few items — at most a few hundred characters, and
    computed without walking the whole value."""
    text = printable(_REPR.repr(value))
    return text if len(text) <= 2 * EXCERPT_CHARS else text[: 2 * EXCERPT_CHARS - 1] + "…"
