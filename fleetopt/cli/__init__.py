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
_COMMAND_MODULES = (
    "plan",
    "export",
    "audit",
    "drift",
    "simulate",
    "workload",
    "calibrate",
    "kv",
    "profiles",
    "queue",
)


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
        except RecursionError:
            typer.echo("Error: an input is nested too deeply to read", err=True)
            raise typer.Exit(1) from None
        except OSError as exc:  # the environment: a full disk, a closed pipe, a missing permission
            where = f" ({exc.filename})" if exc.filename else ""
            try:
                typer.echo(
                    f"Error: cannot write the output or read a file{where}: {exc.strerror or exc}", err=True
                )
            except OSError:
                pass
            raise typer.Exit(1) from None
        except MemoryError:
            typer.echo("Error: out of memory: use a smaller input or fewer requests", err=True)
            raise typer.Exit(1) from None
        except Exception as exc:  # a bug in fleetopt, not the user's input: one line, no traceback
            if _DEBUG["on"] or _is_cli_control(exc):
                raise
            typer.echo(
                f"Error: internal error ({type(exc).__name__}: {exc}) — this is a bug in fleetopt "
                f"{__version__}; please report it with the command you ran (rerun with --debug for the "
                "traceback)",
                err=True,
            )
            raise typer.Exit(INTERNAL_ERROR_EXIT) from None


app = typer.Typer(
    cls=_FleetoptGroup,
    name="fleetopt",
    help="Size an LLM-serving fleet analytically: how many GPUs, in which pools, at what cost.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


#: Exit code of an unexpected internal error (a bug): distinct from 1 (bad input) and 2 (usage,
#: or drift's unusable input); 70 is EX_SOFTWARE of BSD's sysexits.h.
INTERNAL_ERROR_EXIT = 70
_DEBUG = {"on": False}


def _is_cli_control(exc: BaseException) -> bool:
    """typer/click's own exits, aborts and usage errors (typer vendors click in some versions)."""
    return type(exc).__module__.split(".")[0] in ("typer", "click")


def _debug_callback(value: bool) -> None:
    _DEBUG["on"] = bool(value)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fleetopt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False, "--debug", callback=_debug_callback, is_eager=True, help="Show an internal error's traceback."
    ),
) -> None:
    """Size an LLM-serving fleet analytically: how many GPUs, in which pools, at what cost."""


for _name in _COMMAND_MODULES:
    importlib.import_module(f"fleetopt.cli.{_name}").register(app)


def main() -> None:
    """Console-script entry point."""
    app()
