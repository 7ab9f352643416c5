"""The one error family of fleetopt.

Every error a user can cause by bad input is a :class:`FleetoptError`; the CLI turns it
into ``Error: <message>`` on stderr and exit status 1. Messages name the file, the field,
the value and what is allowed, wherever those exist.
"""

from __future__ import annotations


class FleetoptError(Exception):
    """Base class of every error caused by the user's input or environment."""


class ValidationError(FleetoptError):
    """A value, file or field is outside what fleetopt accepts."""


class NotFoundError(FleetoptError):
    """A named profile, workload or file does not exist."""


class InfeasibleError(FleetoptError):
    """No fleet can meet the stated constraints (raised only where a typed result is not possible)."""
