"""The ``fleetopt`` command line: thin typer commands (parse → load → one core call → render).

Each command lives in its own module with a ``register(app)`` function and one line in
:data:`COMMANDS`. A module is imported only when its command runs (or shows its own ``--help``):
``fleetopt --help`` lists every command from :data:`COMMANDS` alone, so start-up imports no
numpy, scipy, yaml or rich. Errors of the :class:`~fleetopt.errors.FleetoptError` family become
``Error: …`` on stderr and exit 1; usage errors exit 2 (click's convention); no traceback
reaches the user for bad input.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import typer
import typer.core

from fleetopt import __version__
from fleetopt.cli.params import lighten_param, lighten_params
from fleetopt.errors import FleetoptError, printable

#: Every command, in the order ``fleetopt --help`` lists them: name → (module, one-line help).
#: Adding a command is one line here and a module with ``register(app)``; the help line must be
#: the first line of the command's own help (``tests/test_cli_basics.py`` checks both agree).
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": (
        "fleetopt.cli.plan",
        "Plan the cheapest fleet (n_s, n_l, B*, γ*) that meets a P99 TTFT SLO, against the baselines.",
    ),
    "export": (
        "fleetopt.cli.export",
        "Turn a plan into what deploys it: vLLM commands, router and gateway configs, Kubernetes and KEDA.",
    ),
    "audit": (
        "fleetopt.cli.audit",
        "Estimate the savings of pool routing (and Compress-and-Route), by every estimate.",
    ),
    "drift": (
        "fleetopt.cli.drift",
        "Check a planned fleet against today's workload: fit, re-plan, distribution shift.",
    ),
    "observe": (
        "fleetopt.cli.observe",
        "Read a running fleet's vLLM metrics: load, P99 TTFT/TPOT, SLO attainment, goodput, workload.",
    ),
    "simulate": (
        "fleetopt.cli.simulate",
        "Simulate a plan's fleet and compare utilization, TTFT, wait and TPOT with its predictions.",
    ),
    "calibrate": (
        "fleetopt.cli.calibrate",
        "Fit W, H, τ and T0 of a serving profile to measured TTFT/TPOT (each run simulated), or --check one.",
    ),
    "kv": (
        "fleetopt.cli.kv",
        "KV bytes per token, KV memory per GPU and slots per instance at each context window.",
    ),
    "queue": (
        "fleetopt.cli.queue",
        "Erlang C (probability of waiting), Erlang B, utilization, mean and quantile wait of an M/G/c queue.",
    ),
    "workload": (
        "fleetopt.cli.workload",
        "Inspect workloads (request logs, summaries, CDFs); summarize and merge logs; SQL for a warehouse.",
    ),
    "profiles": (
        "fleetopt.cli.profiles",
        "List and show the model, GPU and serving profiles (bundled and --profiles-dir).",
    ),
    "schema": (
        "fleetopt.cli.schema",
        "Print the JSON Schema (draft 2020-12) of a plan, drift report, observe report or router file.",
    ),
}


def load_command(name: str) -> Any:
    """Import command ``name``'s module and build its click command (a group for sub-apps)."""
    module_name, _ = COMMANDS[name]
    holder = typer.Typer(rich_markup_mode=None, add_completion=False)
    importlib.import_module(module_name).register(holder)
    command = typer.main.get_group(holder).commands[name]
    lighten_params(command)
    return command


class _FleetoptGroup(typer.core.TyperGroup):
    """Root group: loads commands on demand; turns every FleetoptError below it into ``Error: …``, exit 1."""

    def get_params(self, ctx):  # the root's own --version, --debug and --help
        params = super().get_params(ctx)
        for param in params:
            lighten_param(param)
        return params

    def list_commands(self, ctx):  # the registry's order, not alphabetical
        return list(COMMANDS)

    def get_command(self, ctx, cmd_name):
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:  # click's UsageError: suggest among all commands, loaded or not
            message = getattr(exc, "message", None)
            if isinstance(message, str) and args and "Did you mean" not in message:
                from difflib import get_close_matches

                matches = get_close_matches(args[0], list(COMMANDS))
                if matches:
                    exc.message = (
                        f"{message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
                    )
            raise

    def format_commands(self, ctx, formatter):
        """The command list of ``fleetopt --help`` from :data:`COMMANDS`, importing no command."""
        # click's own shortening (typer vendors click as typer._click in recent versions)
        click_utils = importlib.import_module(
            typer.core.TyperGroup.__mro__[1].__module__.rsplit(".", 1)[0] + ".utils"
        )
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, click_utils.make_default_short_help(text, limit)) for name, (_, text) in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx):
        from fleetopt.cli.signals import Interrupted, interruptible, received

        try:
            with interruptible():
                return super().invoke(ctx)
        except Interrupted as exc:
            _interrupted(exc)
        except Exception as exc:
            signal_received = received()
            if signal_received is not None and not _is_cli_control(exc):
                _interrupted(signal_received)  # e.g. DuckDB's own error for the query it interrupted
            self._fail(exc)

    def _fail(self, exc: Exception) -> NoReturn:
        """Report an error of the command (not a signal) and exit: 1, or 70 for a bug."""
        try:
            raise exc
        except FleetoptError as exc:
            typer.echo(f"Error: {error_text(exc)}", err=True)
            raise typer.Exit(1) from None
        except RecursionError:
            typer.echo("Error: an input is nested too deeply to read", err=True)
            raise typer.Exit(1) from None
        except OSError as exc:  # the environment: a full disk, a closed pipe, a missing permission
            where = f" ({printable(str(exc.filename))})" if exc.filename else ""
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
                f"Error: internal error ({type(exc).__name__}: {error_text(exc)}) — this is a bug in "
                f"fleetopt {__version__}; please report it with the command you ran (rerun with --debug for "
                "the traceback)",
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


#: The longest error message printed (a safety net: messages show user values through
#: fleetopt.errors.excerpt, which bounds each one).
MAX_MESSAGE_CHARS = 4000


def _interrupted(exc: Any) -> NoReturn:
    """A command stopped by SIGINT or SIGTERM (fleetopt.cli.signals.Interrupted): what it wrote and
    left unchanged, and exit 128 + the signal's number."""
    from fleetopt.io.files import WRITTEN

    try:
        typer.echo(f"Error: {exc.message(WRITTEN)}", err=True)
    except OSError:
        pass
    raise typer.Exit(exc.exit_code) from None


def error_text(exc: BaseException) -> str:
    """An exception's message as the terminal gets it: control characters and escape sequences
    escaped (fleetopt.errors.printable), at most MAX_MESSAGE_CHARS characters."""
    text = printable(str(exc))
    if len(text) > MAX_MESSAGE_CHARS:
        text = f"{text[:MAX_MESSAGE_CHARS]}… ({len(text):,} characters)"
    return text


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


def main() -> None:
    """Console-script entry point.

    fleetopt does no large linear algebra, so it runs OpenBLAS on one thread unless told
    otherwise: starting its thread pool costs ~50 ms of CPU per process on two cores (more on
    bigger machines) before any work is done.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    exit_callbacks = _exit_callbacks()
    try:
        app()
        code: Any = 0
    except SystemExit as done:
        code = done.code
    if exit_callbacks is None or _exit_callbacks() != exit_callbacks:
        sys.exit(code)  # something registered work for exit (a library): the usual shutdown
    _leave(code)


def _exit_callbacks() -> int | None:
    """How many atexit callbacks are registered (None where the interpreter does not say)."""
    import atexit

    count = getattr(atexit, "_ncallbacks", None)
    return count() if callable(count) else None


def _leave(code: Any) -> NoReturn:
    """Flush the output and end the process without tearing the interpreter down.

    A finished command has closed its files (outputs are written atomically) and registered no
    exit work, so the module-by-module cleanup of a normal shutdown (~20 ms of CPU after numpy,
    typer and the planner are loaded) only costs time. A failed flush of stdout (a full disk, a
    closed pipe) is the command's error, as it would be in the command itself.
    """
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message")
        sys.stderr.write(f"{code}\n")
        code = 1
    try:
        sys.stdout.flush()
    except OSError as error:
        if code == 0:
            code = 1
            try:
                reason = error.strerror or error
                sys.stderr.write(f"Error: cannot write the output or read a file: {reason}\n")
            except OSError:
                pass
    try:
        sys.stderr.flush()
    except OSError:
        pass
    os._exit(code)
