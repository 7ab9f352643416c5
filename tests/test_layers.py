"""The layering rule: fleetopt.core is pure math and pulls in none of typer, rich or yaml."""

from __future__ import annotations

import subprocess
import sys

import pytest

FORBIDDEN_IN_CORE = ("typer", "rich", "yaml", "click")


def _modules_loaded_by(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def _core_modules() -> list[str]:
    import pkgutil

    import fleetopt.core

    names = [module.name for module in pkgutil.iter_modules(fleetopt.core.__path__)]
    return ["fleetopt.core"] + [f"fleetopt.core.{name}" for name in names]


@pytest.mark.parametrize("module", _core_modules())
def test_core_module_imports_no_presentation_or_file_format_library(module: str) -> None:
    loaded = _modules_loaded_by(f"import {module}")
    offenders = sorted(name for name in loaded if name.split(".")[0] in FORBIDDEN_IN_CORE)
    assert offenders == [], f"{module} pulls in {offenders}"


def test_core_never_imports_io_or_cli() -> None:
    loaded = _modules_loaded_by("; ".join(f"import {m}" for m in _core_modules()))
    assert not any(name.startswith(("fleetopt.io", "fleetopt.cli", "fleetopt.render")) for name in loaded)


def test_io_never_imports_cli_or_render() -> None:
    import pkgutil

    import fleetopt.io

    statement = "; ".join(f"import fleetopt.io.{m.name}" for m in pkgutil.iter_modules(fleetopt.io.__path__))
    loaded = _modules_loaded_by(statement or "import fleetopt.io")
    assert not any(name.startswith(("fleetopt.cli", "fleetopt.render")) for name in loaded)
