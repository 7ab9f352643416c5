"""docs/ci.md: every ``fleetopt …`` line of its code blocks runs as written, with the exit codes it promises.

The command lines are extracted from the markdown (so the page and the tool cannot drift apart) and run
in a folder holding a bundled request log as ``workloads/requests.csv``: the fleet fits its own
workload (exit 0), and the azure-2023-code log in its place is drift (exit 1).
"""

from __future__ import annotations

import gzip
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.io.data import bundled_dir

DOC = Path(__file__).resolve().parents[1] / "docs" / "ci.md"
SHELL_OPERATORS = {">", ">>", "|", "||", "&&", ";", "2>", "&>"}
runner = CliRunner()


def _code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def _fleetopt_commands(text: str) -> list[list[str]]:
    """Arguments (after ``fleetopt``) of every line of a sh/yaml block that starts with ``fleetopt``,
    cut at the first shell operator (redirection, pipe, list)."""
    commands = []
    for language, body in _code_blocks(text):
        if language not in ("sh", "yaml"):
            continue
        for line in body.splitlines():
            stripped = line.strip()
            if not stripped.startswith("fleetopt "):
                continue
            words = shlex.split(stripped, comments=True)
            cut = next((i for i, w in enumerate(words) if w in SHELL_OPERATORS), len(words))
            if words[1:cut] not in commands:  # a command repeated on the page runs once
                commands.append(words[1:cut])
    return commands


def _workflow() -> dict:
    blocks = [body for language, body in _code_blocks(DOC.read_text(encoding="utf-8")) if language == "yaml"]
    assert len(blocks) == 1
    return yaml.safe_load(blocks[0])


def _install_log(folder: Path, bundled: str) -> None:
    with gzip.open(bundled_dir("workloads") / f"{bundled}.csv.gz", "rb") as source:
        (folder / "workloads" / "requests.csv").write_bytes(source.read())


@pytest.fixture(scope="module")
def commands() -> list[list[str]]:
    found = _fleetopt_commands(DOC.read_text(encoding="utf-8"))
    assert [c[0] for c in found].count("plan") >= 1 and [c[0] for c in found].count("drift") >= 2
    assert set(c[0] for c in found) == {"plan", "drift"}
    return found


@pytest.fixture(scope="module")
def ci_folder(tmp_path_factory, commands) -> Path:
    folder = tmp_path_factory.mktemp("ci")
    (folder / "workloads").mkdir()
    (folder / "fleet").mkdir()
    return folder


def test_the_workflow_watches_the_files_its_commands_read(commands) -> None:
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "schedule" in triggers and "pull_request" in triggers
    watched = set(triggers["pull_request"]["paths"])
    for command in commands:
        if command[0] == "drift":
            assert command[command.index("--cdf") + 1] in watched
            assert command[command.index("--plan") + 1] in watched


@pytest.mark.slow  # one plan and four drift checks of the Azure log (~7 s)
def test_documented_commands_fit_then_catch_drift(commands, ci_folder, monkeypatch) -> None:
    monkeypatch.chdir(ci_folder)
    _install_log(ci_folder, "azure-2023-conv")
    for command in (c for c in commands if c[0] == "plan"):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, (command, result.output)
        assert Path(command[command.index("--output") + 1]).is_file()
    drifts = [c for c in commands if c[0] == "drift"]
    for command in drifts:
        result = runner.invoke(app, command)
        assert result.exit_code == 0, (command, result.output)

    _install_log(ci_folder, "azure-2023-code")  # the workload file changes under the committed plan
    for command in drifts:
        result = runner.invoke(app, command)
        assert result.exit_code == 1, (command, result.output)
        fmt = command[command.index("--format") + 1] if "--format" in command else "table"
        if fmt == "json":
            data = json.loads(result.stdout)
            assert data["verdict"] == "drift"
            assert "distribution" in {r["check"] for r in data["reasons"]}
        elif fmt == "markdown":
            assert result.stdout.startswith("### fleetopt drift — **DRIFT: ")
            assert "the total-token distribution moved: KS distance ≥ " in result.stdout
