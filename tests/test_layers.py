"""The layering rule: fleetopt.core is pure math and pulls in none of typer, rich or yaml; core
imports no io, cli or render; io imports no cli or render.

One fresh interpreter proves it all: it imports every core module, records what is loaded,
then every io module, and records again. A module that pulled in a forbidden package would
leave it in ``sys.modules`` (imports are cached), so checking after all of core covers each
core module; the offender is named by importing the core modules one at a time in the same
interpreter and noting which one first brought it in.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import fleetopt.core
import fleetopt.io

FORBIDDEN_IN_CORE = ("typer", "rich", "yaml", "click")

_PROBE = """
import importlib, json, sys
def loaded():
    return sorted(sys.modules)
first_seen = {}
for name in CORE:
    before = set(sys.modules)
    importlib.import_module(name)
    for new in set(sys.modules) - before:
        first_seen.setdefault(new, name)
after_core = loaded()
for name in IO:
    importlib.import_module(name)
after_io = loaded()
importlib.import_module("fleetopt.cli")
result = {"after_core": after_core, "after_io": after_io, "after_cli": loaded()}
print(json.dumps({**result, "first_seen": first_seen}))
"""


def _modules(package) -> list[str]:
    return [package.__name__] + [
        f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)
    ]


@pytest.fixture(scope="module")
def probe() -> dict:
    code = f"CORE = {_modules(fleetopt.core)!r}\nIO = {_modules(fleetopt.io)!r}\n{_PROBE}"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_core_imports_no_presentation_or_file_format_library(probe) -> None:
    offenders = {
        name: probe["first_seen"].get(name)
        for name in probe["after_core"]
        if name.split(".")[0] in FORBIDDEN_IN_CORE
    }
    assert offenders == {}, f"pulled in by (module → core module): {offenders}"


def test_core_never_imports_io_or_cli(probe) -> None:
    above = [
        n for n in probe["after_core"] if n.startswith(("fleetopt.io", "fleetopt.cli", "fleetopt.render"))
    ]
    assert above == [], f"core pulls in {above} (first via {[probe['first_seen'][n] for n in above]})"


def test_io_never_imports_cli_or_render(probe) -> None:
    above = [n for n in probe["after_io"] if n.startswith(("fleetopt.cli", "fleetopt.render"))]
    assert above == [], f"io pulls in {above}"


def test_the_probe_really_loaded_every_module(probe) -> None:
    for name in (*_modules(fleetopt.core), *_modules(fleetopt.io)):
        assert name in probe["after_io"]
    # the probe can see a forbidden package: the CLI, imported last, brings typer and rich in
    assert {"typer", "rich"} <= set(probe["after_cli"])
