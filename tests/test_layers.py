"""The layering rule: fleetopt.core is pure math and pulls in none of typer, rich or yaml; core
imports nothing of fleetopt.io, .cli or .render; fleetopt.io imports nothing of .cli or .render.

One fresh interpreter answers all of it: it imports every fleetopt.core module, one after the
other, noting which modules each import brings into sys.modules, then every fleetopt.io module
the same way. Whatever core module (or anything it imports) loads a forbidden module shows up in
the new modules of that core module's import — so the offender is named — and the union over
the core modules is everything importing all of fleetopt.core loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache

FORBIDDEN_IN_CORE = ("typer", "rich", "yaml", "click", "duckdb", "sqlglot")
#: Loaded only by the commands that read logs or write SQL (DuckDB is ~25 MB of native code).
LAZY_ENGINES = ("duckdb", "sqlglot")

_PROBE = """
import importlib, json, pkgutil, sys

importer = {}  # module -> the module whose import statement first asked for it


class Witness:
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "__main__")):
            frame = frame.f_back
        importer.setdefault(name, frame.f_globals.get("__name__") if frame is not None else None)
        return None


sys.meta_path.insert(0, Witness())

def new_modules_per_import(package_name):
    loaded = set(sys.modules)
    package = importlib.import_module(package_name)
    added = {package_name: sorted(set(sys.modules) - loaded)}
    for module in pkgutil.iter_modules(package.__path__):
        loaded = set(sys.modules)
        importlib.import_module(f"{package_name}.{module.name}")
        added[f"{package_name}.{module.name}"] = sorted(set(sys.modules) - loaded)
    return added

preloaded = sorted(sys.modules)
core = new_modules_per_import("fleetopt.core")
io = new_modules_per_import("fleetopt.io")
print(json.dumps({"preloaded": preloaded, "core": core, "io": io, "importer": importer}))
"""


@cache
def _imports() -> dict:
    """{"preloaded": modules loaded at start-up, "core": {core module: modules its import added},
    "io": {io module: ...}, "importer": {module: the module that imported it}}, from one fresh
    interpreter that imports all of fleetopt.core, then all of fleetopt.io."""
    out = subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def _offenders(layer: str, forbidden: tuple[str, ...]) -> list[str]:
    """One line per module of ``layer`` whose import loads a ``forbidden`` package, naming what it
    loads and which module asked for it (any submodule import loads its package first)."""
    imports = _imports()
    lines = []
    for module, new in imports[layer].items():
        found = sorted(name for name in new if name in forbidden)
        if found:
            how = ", ".join(f"{name} (imported by {imports['importer'].get(name)})" for name in found)
            lines.append(f"importing {module} loads {how}")
    return lines


def test_the_probe_starts_clean_and_imports_every_core_module() -> None:
    # A layer's imports can only show up if nothing forbidden was loaded before them.
    forbidden = {*FORBIDDEN_IN_CORE, "fleetopt", "fleetopt.io", "fleetopt.cli", "fleetopt.render"}
    assert forbidden.isdisjoint(_imports()["preloaded"])
    import pkgutil

    import fleetopt.core

    expected = {"fleetopt.core"} | {
        f"fleetopt.core.{m.name}" for m in pkgutil.iter_modules(fleetopt.core.__path__)
    }
    assert set(_imports()["core"]) == expected


def test_core_modules_import_no_presentation_or_file_format_library() -> None:
    offenders = _offenders("core", FORBIDDEN_IN_CORE)
    assert offenders == [], "; ".join(offenders)


def test_core_never_imports_io_or_cli() -> None:
    offenders = _offenders("core", ("fleetopt.io", "fleetopt.cli", "fleetopt.render"))
    assert offenders == [], "; ".join(offenders)


def test_io_never_imports_cli_or_render() -> None:
    offenders = _offenders("io", ("fleetopt.cli", "fleetopt.render"))
    assert offenders == [], "; ".join(offenders)


def test_io_loads_the_log_engine_only_when_a_log_is_read() -> None:
    offenders = _offenders("io", LAZY_ENGINES)
    assert offenders == [], "; ".join(offenders)


def test_help_does_not_import_duckdb_or_sqlglot() -> None:
    """`fleetopt --help` (and every command's --help) starts without the log engine."""
    probe = (
        "import sys\n"
        "from fleetopt.cli import app\n"
        "for args in (['--help'], ['workload', '--help'], ['workload', 'summarize', '--help'],\n"
        "             ['plan', '--help']):\n"
        "    try:\n"
        "        app(args, standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in ('duckdb', 'sqlglot') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
