"""``fleetopt schema``: the JSON Schema (draft 2020-12) of a document fleetopt writes and reads.

Derived from the documents' dataclasses (:mod:`fleetopt.io.documents`), so it is the schema the
readers check: every document ``fleetopt plan``, ``drift``, ``observe`` and ``export --to router``
writes validates against it, and a document that does not is refused on read.
"""

from __future__ import annotations

import enum

import typer


class SchemaName(str, enum.Enum):
    """The documents with a published schema."""

    plan = "plan"
    drift = "drift"
    observe = "observe"
    router = "router"


def register(app: typer.Typer) -> None:
    """Add ``schema`` to ``app``."""
    app.command("schema")(schema)


def schema(
    name: SchemaName = typer.Argument(
        ...,
        help="plan (fleetopt plan --format json|yaml, --output), drift (fleetopt drift --format "
        "json|yaml), observe (fleetopt observe --format json|yaml) or router (fleetopt export --to router).",
        show_default=False,
    ),
) -> None:
    """Print the JSON Schema (draft 2020-12) of a plan, drift report, observe report or router file."""
    import json

    from fleetopt.io.documents import json_schema

    typer.echo(json.dumps(json_schema(name.value), indent=2, ensure_ascii=False))
