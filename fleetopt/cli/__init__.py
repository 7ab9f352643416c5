"""The ``fleetopt`` command line: thin typer commands (parse → load → one core call → render).

Each command lives in its own module with a ``register(app)`` function. Errors of the
:class:`~fleetopt.errors.FleetoptError` family become ``Error: …`` on stderr and exit 1;
usage errors exit 2 (click's convention); no traceback reaches the user for bad input.
"""

from __future__ import annotations

import importlib

import typer
import typer.core

from fleetopt import __version__
from fleetopt.errors import FleetoptError

# Command modules, in the order ``fleetopt --help`` lists them.
_COMMAND_MODULES = ("plan", "audit", "drift", "simulate", "workload", "calibrate", "kv", "profiles", "queue")


class _FleetoptGroup(typer.core.TyperGroup):
    """Root group: turns every FleetoptError raised below it into ``Error: …`` and exit 1."""

    def list_commands(self, ctx):  # keep registration order, not alphabetical
        return list(self.commands)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except FleetoptError as exc:
            typer.echo(f"Error: {exc}", err=True)
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=_FleetoptGroup,
    name="fleetopt",
    help="Size an LLM-serving fleet analytically: how many GPUs, in which pools, at what cost.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fleetopt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Size an LLM-serving fleet analytically: how many GPUs, in which pools, at what cost."""


for _name in _COMMAND_MODULES:
    importlib.import_module(f"fleetopt.cli.{_name}").register(app)


def main() -> None:
    """Console-script entry point."""
    app()
