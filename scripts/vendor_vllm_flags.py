"""Vendor the command-line flags each supported vLLM release defines (tests/data/vllm-flags/).

``fleetopt export --vllm-version`` decides which flags it writes; the tests check every flag it
writes against the flags the chosen release's own argument parser defines. vLLM declares its engine
flags in ``vllm/engine/arg_utils.py`` (``EngineArgs.add_cli_args``: one ``add_argument("--name", …)``
per flag); this script reads that file out of each release's wheel from PyPI (a zip: nothing is
installed or imported) and writes the sorted flag names with the release's version and commit
(``vllm/_version.py``), one JSON file per release.

``negated_flags``: the ``--no-<flag>`` forms argparse's ``BooleanOptionalAction`` adds, which no
string in the source spells: flags declared with ``action=argparse.BooleanOptionalAction``, or with
``**get_kwargs(SomeConfig)["field"]`` where the config dataclass types ``field`` as a bool (vLLM's
``get_kwargs`` gives such fields ``BooleanOptionalAction``: "Creates --no-<name> and --<name>
flags"); the config classes are read from ``vllm/config`` of the same wheel (parsed with ``ast``).
Run by hand when a release is added:

    pip download --no-deps -d wheels vllm==0.33.0
    python scripts/vendor_vllm_flags.py wheels/vllm-0.33.0-*.whl
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "vllm-flags"
_FLAG = re.compile(r"""["'](--[a-z0-9][a-z0-9-]*)["']""")
_VERSION = re.compile(r"""__version__ = version = ['"]([^'"]+)['"]""")
_COMMIT = re.compile(r"""commit_id = ['"]g?([0-9a-f]+)['"]""")


def flags_of_wheel(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read("vllm/engine/arg_utils.py").decode()
        version_file = archive.read("vllm/_version.py").decode()
        configs = [
            archive.read(name).decode()
            for name in archive.namelist()
            if name == "vllm/config.py" or (name.startswith("vllm/config/") and name.endswith(".py"))
        ]
    version, commit = _VERSION.search(version_file), _COMMIT.search(version_file)
    return {
        "vllm_version": version.group(1) if version else None,
        "commit": commit.group(1) if commit else None,
        "source": f"vllm/engine/arg_utils.py of the PyPI wheel {wheel.name}",
        "flags": sorted(set(_FLAG.findall(source))),
        "negated_flags": negated_flags(source, configs),
    }


def _config_fields(sources: list[str]) -> dict[str, tuple[list[str], dict[str, ast.expr]]]:
    """Each class of the config modules: its base classes' names and its annotated fields."""
    classes: dict[str, tuple[list[str], dict[str, ast.expr]]] = {}
    for text in sources:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                fields = {
                    item.target.id: item.annotation
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
                bases = [ast.unparse(b).split(".")[-1] for b in node.bases]
                classes.setdefault(node.name, (bases, fields))
    return classes


def _is_bool(annotation: ast.expr) -> bool:
    """Whether a type hint is a bool as vLLM's ``get_type_hints`` sees it: ``bool``, or a bool inside
    ``Optional``, ``Union``, ``X | Y``, the first argument of ``Annotated`` or pydantic's
    ``SkipValidation[X]`` (``Annotated[X, SkipValidation()]`` at run time)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return _is_bool(ast.parse(annotation.value, mode="eval").body)
    if isinstance(annotation, ast.Name):
        return annotation.id == "bool"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_bool(annotation.left) or _is_bool(annotation.right)
    if isinstance(annotation, ast.Subscript):
        outer = ast.unparse(annotation.value).split(".")[-1]
        inner = annotation.slice
        parts = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if outer in ("Optional", "Union"):
            return any(_is_bool(p) for p in parts)
        if outer in ("Annotated", "SkipValidation"):
            return _is_bool(parts[0])
    return False


def _field_annotation(classes, name: str, field: str) -> ast.expr | None:
    bases, fields = classes.get(name, ([], {}))
    if field in fields:
        return fields[field]
    for base in bases:
        if (found := _field_annotation(classes, base, field)) is not None:
            return found
    return None


def negated_flags(source: str, config_sources: list[str]) -> list[str]:
    """The ``--no-`` flags of ``arg_utils.py`` (``source``): see the module's docstring."""
    classes = _config_fields(config_sources)
    tree = ast.parse(source)
    config_of: dict[str, str] = {}  # a variable holding get_kwargs(Config) -> Config
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "get_kwargs"
            and node.value.args
            and isinstance(node.value.args[0], ast.Name)
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    config_of[target.id] = node.value.args[0].id

    def from_config(value: ast.expr) -> bool:
        """``X_kwargs["field"]`` of a bool field."""
        if not (
            isinstance(value, ast.Subscript)
            and isinstance(value.value, ast.Name)
            and value.value.id in config_of
            and isinstance(value.slice, ast.Constant)
        ):
            return False
        annotation = _field_annotation(classes, config_of[value.value.id], value.slice.value)
        return annotation is not None and _is_bool(annotation)

    def boolean_optional(call: ast.Call) -> bool:
        found = False
        for keyword in call.keywords:
            if keyword.arg == "action":
                return ast.unparse(keyword.value).endswith("BooleanOptionalAction")
            if keyword.arg is None and isinstance(keyword.value, ast.Dict):  # **{**X["f"], "k": v}
                for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                    if key is None:
                        found = found or from_config(value)
                    elif isinstance(key, ast.Constant) and key.value == "action":
                        return ast.unparse(value).endswith("BooleanOptionalAction")
            elif keyword.arg is None:
                found = found or from_config(keyword.value)
        return found

    negated = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(".add_argument"):
            names = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")
            ]
            if names and boolean_optional(node):
                negated.update("--no-" + name[2:] for name in names)
    return sorted(negated)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("wheels", nargs="+", type=Path)
    OUT.mkdir(parents=True, exist_ok=True)
    for wheel in parser.parse_args().wheels:
        document = flags_of_wheel(wheel)
        target = OUT / f"vllm-{document['vllm_version']}.json"
        target.write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {target}: {len(document['flags'])} flags, {len(document['negated_flags'])} --no- forms")


if __name__ == "__main__":
    main()
