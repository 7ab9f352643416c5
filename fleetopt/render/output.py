"""One place that turns a command's result dictionary into text.

Every command builds one plain dictionary (JSON-compatible) and hands it here with a
function that draws it for people; ``--format json|yaml`` prints the same dictionary.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from rich.console import Console


class OutputFormat(str, enum.Enum):
    """The ``--format`` choices common to every command."""

    table = "table"
    json = "json"
    yaml = "yaml"


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, dataclasses, enums and tuples to plain JSON types.

    Non-finite floats become ``None`` so that the JSON is strict (RFC 8259).
    """
    kind = type(value)  # the plain types first: a plan document is thousands of them
    if kind is dict:
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is list or kind is tuple:
        return [to_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "tolist"):  # numpy scalar or array
        return to_jsonable(value.tolist())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def dumps(data: Mapping[str, Any], fmt: OutputFormat | str) -> str:
    """Serialize ``data`` as JSON or YAML text (ending in a newline)."""
    fmt = OutputFormat(fmt)
    plain = to_jsonable(data)
    if fmt is OutputFormat.json:
        return json.dumps(plain, indent=2, allow_nan=False) + "\n"
    if fmt is OutputFormat.yaml:
        from fleetopt.io.yamlio import dump_yaml

        return dump_yaml(plain)
    raise ValueError(f"not a machine format: {fmt}")


def output_width() -> int | None:
    """The width to lay text out at: the terminal's (None: rich asks it), else ``COLUMNS``, else none.

    Piped output without ``COLUMNS`` has no width: sentences are not hard-wrapped and tables take
    their natural width (:data:`fleetopt.render.layout.UNLIMITED_WIDTH`).
    """
    from fleetopt.render.layout import UNLIMITED_WIDTH

    if sys.stdout.isatty():
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return UNLIMITED_WIDTH


def make_console(file: Any = None) -> Console:
    """A console on the current stdout (so test runners capture it) at :func:`output_width`."""
    from rich.console import Console

    return Console(file=file or sys.stdout, width=output_width(), highlight=False, soft_wrap=False)


def emit(
    data: Mapping[str, Any],
    fmt: OutputFormat | str,
    draw: Callable[[Console, Mapping[str, Any]], None],
) -> None:
    """Print ``data``: drawn for people with ``draw`` for ``table``, serialized otherwise.

    Drawn text that does not go to a terminal is written with trailing spaces stripped (rich pads
    titles and wrapped lines to the table or console width).
    """
    fmt = OutputFormat(fmt)
    if fmt is not OutputFormat.table:
        sys.stdout.write(dumps(data, fmt))
    elif sys.stdout.isatty():
        draw(make_console(), data)
    else:
        buffer = io.StringIO()
        draw(make_console(buffer), data)
        sys.stdout.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))
