"""CLI conventions every command inherits: --version, --help, exit codes, installed data."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetopt import __version__
from fleetopt.cli import app

runner = CliRunner()


def test_version_prints_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"fleetopt {__version__}\n"


def test_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("plan", "audit", "drift", "simulate", "workload", "kv", "profiles", "queue"):
        assert command in result.output


def test_unknown_command_is_a_usage_error_with_exit_2() -> None:
    result = runner.invoke(app, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command 'no-such-command'" in result.output


@pytest.mark.skipif(shutil.which("fleetopt") is None, reason="console script not installed")
def test_console_script_runs_from_another_directory(tmp_path) -> None:
    completed = subprocess.run(["fleetopt", "--version"], cwd=tmp_path, capture_output=True, text=True)
    assert completed.returncode == 0
    assert completed.stdout.strip() == f"fleetopt {__version__}"


# -- start-up: commands are imported on demand ------------------------------------------------------

#: Modules `fleetopt --help` must not import: the math, data formats, tables and typer's pydantic
#: adapter are loaded by the commands that use them (issue 18).
HEAVY_MODULES = (
    "numpy", "scipy", "yaml", "rich.console", "rich.table", "pydantic", "mpmath", "duckdb", "numba",
)  # fmt: skip


def _imported_after(args: list[str]) -> dict[str, bool]:
    """Run ``fleetopt ARGS`` in a fresh interpreter: which HEAVY_MODULES and command modules it loaded."""
    import json
    import sys

    probe = (
        "import contextlib, io, json, sys\n"
        "from fleetopt.cli import app\n"
        f"sys.argv = ['fleetopt'] + {args!r}\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        app()\n"
        "    except SystemExit as exit:\n"
        "        assert exit.code in (0, None), exit.code\n"
        "print(json.dumps({m: m in sys.modules for m in sys.argv[1:] or []} | "
        f"{{m: m in sys.modules for m in {list(HEAVY_MODULES)!r}}} | "
        "{m: True for m in sys.modules if m.startswith(('fleetopt.cli.', 'fleetopt.api.', 'fleetopt.io.'))"
        " and m != 'fleetopt.cli.params'}))\n"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)


def test_help_imports_no_heavy_module_and_no_command() -> None:
    loaded = _imported_after(["--help"])
    assert [name for name in HEAVY_MODULES if loaded[name]] == []
    assert [name for name in loaded if name.startswith("fleetopt.cli.")] == []


def test_a_machine_readable_command_imports_neither_rich_nor_pydantic() -> None:
    loaded = _imported_after(["profiles", "list", "--format", "json"])
    assert not loaded["rich.console"] and not loaded["pydantic"] and not loaded["scipy"]
    assert "fleetopt.cli.profiles" in loaded and "fleetopt.cli.plan" not in loaded


def test_a_fleet_sim_plan_of_a_cdf_imports_no_scipy() -> None:
    """The papers' command (issue 18's comparison with the reference): a CDF has no arrival
    times, so nothing needs scipy (its import is ~0.12 s, half of the command)."""
    args = ["plan", "--cdf", "azure", "--slo", "500ms", "--rate", "10", "--b-short", "4096"]
    loaded = _imported_after([*args, "--service-model", "fleet-sim", "--format", "json"])
    assert not loaded["scipy"] and not loaded["rich.console"] and not loaded["numba"]
    assert [m for m in loaded if m.startswith("fleetopt.api.") or m.startswith("fleetopt.io.log")] == []


def test_a_plan_of_a_cdf_file_imports_no_yaml() -> None:
    """The reference comparison's command on a CDF file: bundled profiles come from their parsed
    cache, so yaml (~9 ms) is not imported, nor are the log readers or the other commands' API."""
    from fleetopt.io.data import bundled_dir

    cdf = str(bundled_dir("workloads") / "azure.cdf.json")
    args = ["plan", "--cdf", cdf, "--slo", "500ms", "--rate", "10", "--b-short", "4096"]
    loaded = _imported_after([*args, "--service-model", "fleet-sim", "--format", "json"])
    assert not loaded["yaml"] and not loaded["scipy"]
    assert [m for m in loaded if m.startswith("fleetopt.api.") or m.startswith("fleetopt.io.log")] == []
    assert "fleetopt.io.profile_cache" in loaded and "fleetopt.io.workloads" in loaded


def test_the_registry_help_line_is_each_commands_own() -> None:
    from fleetopt.cli import COMMANDS, load_command

    for name, (_, line) in COMMANDS.items():
        command = load_command(name)
        assert command.name == name
        assert command.get_short_help_str(limit=10_000) == line, name


def test_help_lists_every_command_in_registry_order_with_its_line() -> None:
    from fleetopt.cli import COMMANDS

    output = runner.invoke(app, ["--help"], terminal_width=400).output
    listed = [line.split()[0] for line in output.split("Commands:")[1].strip().splitlines()]
    assert listed == list(COMMANDS)
    for _module, line in COMMANDS.values():
        assert line in output


def test_a_mistyped_command_gets_a_suggestion() -> None:
    result = runner.invoke(app, ["plna"])
    assert result.exit_code == 2
    assert "No such command 'plna'. Did you mean 'plan'?" in result.output


def _outcome(function, *args, **kwargs):
    """A call's value, or its exception's type and message."""
    try:
        return ("value", function(*args, **kwargs))
    except Exception as error:  # noqa: BLE001 — the outcome is what is compared
        return ("error", type(error).__name__, str(getattr(error, "message", error)))


def test_light_option_coercion_gives_typers_values_and_errors(tmp_path) -> None:
    """Every option of every command converts every sample spelling exactly as typer's own (pydantic) path."""
    coercion = pytest.importorskip("typer._coercion")
    from fleetopt.cli import COMMANDS, load_command
    from fleetopt.cli.params import _LightCoercion

    samples = ["12", "-3", "0", "007", "1.5", "2.5e3", "1e400", "nan", "abc", "", " 5", "85%", "json"]
    samples += [str(tmp_path), str(tmp_path / "missing.yaml")]
    checked = 0

    def params_of(command):
        yield from command.params
        for sub in getattr(command, "commands", {}).values():
            yield from params_of(sub)

    for name in COMMANDS:
        for param in params_of(load_command(name)):
            if not hasattr(param, "type_descriptor") or param.multiple or param.nargs != 1:
                continue
            full = coercion.build_runtime_param(param.type_descriptor)
            for value in samples:
                fast = _outcome(_LightCoercion(param).coerce, value, param, None)
                slow = _outcome(full.coerce, value, param=param, ctx=None)
                assert repr(fast) == repr(slow), (name, param.name, value)  # repr: nan == nan
                checked += 1
    assert checked > 500


def _run_main(args: list[str], stdout) -> subprocess.CompletedProcess:
    import sys

    return subprocess.run(
        [sys.executable, "-m", "fleetopt", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )


def test_the_console_entry_point_flushes_everything_and_keeps_exit_codes(tmp_path) -> None:
    """main() ends the process itself (no interpreter teardown): the output must still be complete,
    and exit codes (0, 1 for bad input, 2 for usage) unchanged."""
    import json

    out = tmp_path / "queue.json"
    with out.open("w") as handle:
        done = _run_main(["queue", "--servers", "100", "--load", "85", "-f", "json"], handle)
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(out.read_text())["servers"] == 100
    assert _run_main(["plan", "--cdf", "no-such-workload", "--slo", "1s"], subprocess.DEVNULL).returncode == 1
    assert _run_main(["plan", "--cdf", "azure"], subprocess.DEVNULL).returncode == 2


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_stdout_at_the_final_flush_is_exit_1_with_one_line() -> None:
    with open("/dev/full", "w") as full:
        done = _run_main(["queue", "--servers", "10", "--load", "8", "-f", "json"], full)
    assert done.returncode == 1
    assert done.stderr == "Error: cannot write the output or read a file: No space left on device\n"
