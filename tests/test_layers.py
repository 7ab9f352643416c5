"""The layering rule, every layer: imports point one way.

    core    imports nothing of fleetopt above it, and no typer, rich, yaml or DuckDB;
    io      imports only core (DuckDB and sqlglot only when a log is read or SQL written);
    api     imports core and io — never a renderer or the CLI;
    render  imports core and io — never the API or the CLI;
    cli     imports anything, but is thin: importing a command loads none of the work (no numpy,
            scipy, yaml, rich tables, DuckDB, core, io or API module) until the command runs.

Two independent checks. Statically, every ``import`` statement of a layer's modules — at module
level, inside functions (the lazy imports) and under ``TYPE_CHECKING`` alike — names only the
packages the layer may use. At run time, a fresh interpreter per layer imports every module of it,
one after the other, noting which modules each import brings into sys.modules: whatever a module
(or anything it imports) loads that it must not shows up in that module's new modules, so the
offender is named.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import fleetopt

FORBIDDEN_IN_CORE = ("typer", "rich", "yaml", "click", "duckdb", "sqlglot")
#: Loaded only by the commands that read logs or write SQL (DuckDB is ~25 MB of native code).
LAZY_ENGINES = ("duckdb", "sqlglot")
#: The fleetopt packages each layer may import (``fleetopt`` itself: ``__version__``; defaults and
#: errors are shared by all).
ALLOWED = {
    "core": {"core", "defaults", "errors"},
    "io": {"core", "io", "defaults", "errors", ""},
    "api": {"core", "io", "api", "defaults", "errors", ""},
    "render": {"core", "io", "render", "defaults", "errors", ""},
}
#: What importing a command module must not load: the work runs when the command does.
HEAVY_FOR_A_COMMAND = ("numpy", "scipy", "yaml", "rich.console", "rich.table", "duckdb", "sqlglot", "numba")

PACKAGE = Path(fleetopt.__file__).parent

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
    for module in pkgutil.walk_packages(package.__path__, prefix=package_name + "."):
        loaded = set(sys.modules)
        importlib.import_module(module.name)
        added[module.name] = sorted(set(sys.modules) - loaded)
    return added

preloaded = sorted(sys.modules)
layers = {name: new_modules_per_import(name) for name in sys.argv[1:]}
print(json.dumps({"preloaded": preloaded, "layers": layers, "importer": importer}))
"""


@cache
def _imports(*packages: str) -> dict:
    """{"preloaded": modules loaded at start-up, "layers": {package: {module: modules its import
    added}}, "importer": {module: the module that imported it}}, from one fresh interpreter that
    imports every module of ``packages``, in order."""
    command = [sys.executable, "-c", _PROBE, *packages]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def _offenders(imports: dict, package: str, forbidden: tuple[str, ...]) -> list[str]:
    """One line per module of ``package`` whose import loads a ``forbidden`` module or package,
    naming what it loads and which module asked for it."""
    lines = []
    for module, new in imports["layers"][package].items():
        found = sorted(
            name for name in new if name in forbidden or name.startswith(tuple(f + "." for f in forbidden))
        )
        if found:
            how = ", ".join(f"{name} (imported by {imports['importer'].get(name)})" for name in found)
            lines.append(f"importing {module} loads {how}")
    return lines


def _core_and_io() -> dict:
    return _imports("fleetopt.core", "fleetopt.io")


# -- static: every import statement of a layer, lazy ones included ----------------------------------


def _fleetopt_imports(path: Path) -> list[tuple[int, str]]:
    """(line, ``fleetopt.x…``) of every import statement in ``path`` naming a fleetopt module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "fleetopt":  # from fleetopt import api, __version__
                found += [(node.lineno, f"fleetopt.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "fleetopt"]


def _layer_of(name: str) -> str:
    """The package below ``fleetopt`` a module name belongs to ('' for ``__version__``)."""
    part = name.split(".")[1] if "." in name else ""
    return "" if part.startswith("__") else part


def test_every_import_statement_points_down() -> None:
    offenders = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for line, name in _fleetopt_imports(path):
                if _layer_of(name) not in allowed:
                    where = path.relative_to(PACKAGE.parent)
                    offenders.append(f"{where}:{line} imports {name} ({layer} may import {sorted(allowed)})")
    assert offenders == [], "\n".join(offenders)


def test_the_static_check_sees_lazy_and_type_only_imports(tmp_path) -> None:
    """The check would catch what the run-time probe cannot: an import inside a function."""
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fleetopt.cli import app\n"
        "def f():\n    from fleetopt.api import plan_workload\n    import fleetopt.render.plan\n"
        "from fleetopt import api, __version__\n"
    )
    found = sorted(_fleetopt_imports(module))
    assert found == [
        (3, "fleetopt.cli"), (5, "fleetopt.api"), (6, "fleetopt.render.plan"), (7, "fleetopt.__version__"),
        (7, "fleetopt.api"),
    ]  # fmt: skip
    assert sorted({_layer_of(name) for _, name in found}) == ["", "api", "cli", "render"]


# -- run time: what importing each module loads --------------------------------------------------------


def _modules_on_disk(layer: str) -> set[str]:
    """Every module of ``fleetopt.<layer>`` (packages included), from its files."""
    names = set()
    for path in (PACKAGE / layer).rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_probe_starts_clean_and_imports_every_module() -> None:
    # A layer's imports can only show up if nothing forbidden was loaded before them.
    forbidden = {
        *FORBIDDEN_IN_CORE,
        "fleetopt",
        "fleetopt.io",
        "fleetopt.cli",
        "fleetopt.render",
        "fleetopt.api",
    }
    assert forbidden.isdisjoint(_core_and_io()["preloaded"])
    assert set(_core_and_io()["layers"]["fleetopt.core"]) == _modules_on_disk("core")
    assert set(_core_and_io()["layers"]["fleetopt.io"]) == _modules_on_disk("io")
    for layer in ("api", "render", "cli"):
        assert set(_imports(f"fleetopt.{layer}")["layers"][f"fleetopt.{layer}"]) == _modules_on_disk(layer)


def test_core_modules_import_no_presentation_or_file_format_library() -> None:
    offenders = _offenders(_core_and_io(), "fleetopt.core", FORBIDDEN_IN_CORE)
    assert offenders == [], "; ".join(offenders)


def test_core_never_imports_io_api_render_or_cli() -> None:
    above = ("fleetopt.io", "fleetopt.api", "fleetopt.cli", "fleetopt.render")
    offenders = _offenders(_core_and_io(), "fleetopt.core", above)
    assert offenders == [], "; ".join(offenders)


def test_io_imports_only_core() -> None:
    offenders = _offenders(_core_and_io(), "fleetopt.io", ("fleetopt.api", "fleetopt.cli", "fleetopt.render"))
    assert offenders == [], "; ".join(offenders)


def test_io_loads_the_log_engine_only_when_a_log_is_read() -> None:
    offenders = _offenders(_core_and_io(), "fleetopt.io", LAZY_ENGINES)
    assert offenders == [], "; ".join(offenders)


def test_the_api_imports_no_renderer_cli_or_terminal_library() -> None:
    imports = _imports("fleetopt.api")
    forbidden = ("fleetopt.render", "fleetopt.cli", "typer", "rich", "click")
    offenders = _offenders(imports, "fleetopt.api", forbidden)
    assert offenders == [], "; ".join(offenders)


def test_the_api_loads_its_command_submodules_only_on_first_use() -> None:
    """``import fleetopt.api`` (what a plan needs) loads none of drift, simulation, audit or
    calibration, nor the log engine; ``from fleetopt.api import check_plan_drift`` still works."""
    added = _imports("fleetopt.api")["layers"]["fleetopt.api"]["fleetopt.api"]
    submodules = sorted(name for name in added if name.startswith("fleetopt.api."))
    assert submodules == []
    assert [name for name in added if name.split(".")[0] in LAZY_ENGINES] == []
    from fleetopt.api import check_plan_drift

    assert check_plan_drift.__module__ == "fleetopt.api.drift"


def test_render_imports_neither_the_api_nor_the_cli() -> None:
    imports = _imports("fleetopt.render")
    offenders = _offenders(imports, "fleetopt.render", ("fleetopt.api", "fleetopt.cli"))
    assert offenders == [], "; ".join(offenders)


def test_the_cli_is_thin_a_command_module_loads_none_of_the_work() -> None:
    imports = _imports("fleetopt.cli")
    commands = {name for name in imports["layers"]["fleetopt.cli"] if name != "fleetopt.cli"}
    layers = ("fleetopt.core", "fleetopt.io", "fleetopt.api")
    lines = []
    for module in sorted(commands):
        new = imports["layers"]["fleetopt.cli"][module]
        found = [n for n in new if n in HEAVY_FOR_A_COMMAND or n.split(".")[0] in HEAVY_FOR_A_COMMAND]
        found += [n for n in new if n.startswith(layers)]
        if found:
            lines.append(f"importing {module} loads {', '.join(sorted(found))}")
    assert lines == [], "; ".join(lines)


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


def test_a_plan_document_loads_the_arrival_statistics_only_when_it_holds_them() -> None:
    """A CDF's plan has no arrival statistics: writing its document imports no core.workload_stats
    (~5 ms of every such plan's start-up); the schema, which names them, does."""
    probe = (
        "import sys\n"
        "from fleetopt.io.documents.plan import PlanDocument, RateBasis\n"
        "from fleetopt.io.documents.typed import to_document\n"
        "from fleetopt.core.planner import PlanOptions\n"
        "from fleetopt.io.documents.build_plan import rate_basis_document\n"
        "to_document(rate_basis_document(PlanOptions(sizing_rate_per_s=10.0, ttft_slo_s=0.5)))\n"
        "before = 'fleetopt.core.workload_stats' in sys.modules\n"
        "from fleetopt.io.documents import json_schema\n"
        "json_schema('plan')\n"
        "print(before, 'fleetopt.core.workload_stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "True"]
