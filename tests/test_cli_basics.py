"""CLI conventions every command inherits: --version, --help, exit codes, installed data."""

from __future__ import annotations

import shutil
import subprocess

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
