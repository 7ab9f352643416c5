"""Vendor the JSON schemas the export tests validate manifests against (tests/data/schemas/).

The tests run without network; this script, run by hand when a target version changes, writes
self-contained copies (every ``$ref`` resolved into the file's own ``$defs``, descriptions dropped:
validation is unchanged, the files are a quarter of the size):

- Kubernetes ``apps/v1`` Deployment and ``v1`` Service, "strict" variant (unknown fields are
  errors), from the JSON schemas the ``kubernetes-validate`` package ships (PyPI
  kubernetes-validate 1.37.0, Apache-2.0; generated from the Kubernetes OpenAPI specification,
  Apache-2.0) — ``pip install kubernetes-validate==1.37.0`` into any environment first;
- prometheus-operator's PodMonitor, ServiceMonitor and PrometheusRule (``monitoring.coreos.com/v1``):
  the ``openAPIV3Schema`` of ``example/prometheus-operator-crd/`` of prometheus-operator v0.93.0
  (Apache-2.0);
- KEDA's ScaledObject (``keda.sh/v1alpha1``): the ``openAPIV3Schema`` of the CustomResourceDefinition
  ``config/crd/bases/keda.sh_scaledobjects.yaml`` of kedacore/keda v2.20.2 (Apache-2.0), as a file.

    python scripts/vendor_schemas.py --kubernetes-validate PATH/TO/site-packages/kubernetes_validate \\
        --keda-crd keda.sh_scaledobjects.yaml --prometheus-operator-crds PATH/TO/prometheus-operator-crd
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "schemas"
KUBERNETES_VERSIONS = ("1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.37.0")
KUBERNETES_KINDS = (
    "deployment-apps-v1", "service-v1", "poddisruptionbudget-policy-v1", "persistentvolumeclaim-v1",
)  # fmt: skip
KEDA_VERSION = "2.20.2"
PROMETHEUS_OPERATOR_VERSION = "0.93.0"
#: The prometheus-operator CRDs export writes (example/prometheus-operator-crd/ of the release).
PROMETHEUS_OPERATOR_KINDS = ("podmonitors", "servicemonitors", "prometheusrules")


def _strip_descriptions(node: Any) -> Any:
    """The schema without its ``description`` annotations (a property *named* description stays)."""
    if isinstance(node, dict):
        return {
            key: _strip_descriptions(value)
            for key, value in node.items()
            if not (key == "description" and isinstance(value, str))
        }
    if isinstance(node, list):
        return [_strip_descriptions(value) for value in node]
    return node


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and "#/$defs/" in ref:
            found.add(ref.split("#/$defs/", 1)[1])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _local_refs(node: Any) -> Any:
    """Point every ``.../_definitions.json#/$defs/X`` reference at this file's own ``#/$defs/X``."""
    if isinstance(node, dict):
        return {
            key: ("#/$defs/" + value.split("#/$defs/", 1)[1])
            if key == "$ref" and isinstance(value, str) and "#/$defs/" in value
            else _local_refs(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_local_refs(value) for value in node]
    return node


def vendor_kubernetes(package: Path) -> None:
    for version in KUBERNETES_VERSIONS:
        folder = package / "kubernetes-json-schema" / f"v{version}-local-strict"
        definitions = json.loads((folder / "_definitions.json").read_text())["$defs"]
        target = OUT / f"kubernetes-v{version}-strict"
        target.mkdir(parents=True, exist_ok=True)
        for kind in KUBERNETES_KINDS:
            top = json.loads((folder / f"{kind}.json").read_text())
            needed: set[str] = set()
            _refs(top, needed)
            closure: set[str] = set()
            while needed - closure:
                name = sorted(needed - closure)[0]
                closure.add(name)
                _refs(definitions[name], needed)
            schema = {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                **_local_refs(top),
                "$defs": {name: _local_refs(definitions[name]) for name in sorted(closure)},
            }
            text = json.dumps(_strip_descriptions(schema), indent=1, sort_keys=True) + "\n"
            (target / f"{kind}.json").write_text(text)


def vendor_keda(crd: Path) -> None:
    document = yaml.safe_load(crd.read_text())
    (version,) = [v for v in document["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", **version["schema"]["openAPIV3Schema"]}
    target = OUT / f"keda-v{KEDA_VERSION}"
    target.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_strip_descriptions(schema), indent=1, sort_keys=True) + "\n"
    (target / "scaledobject-keda-v1alpha1.json").write_text(text)


def vendor_prometheus_operator(crd_dir: Path) -> None:
    target = OUT / f"prometheus-operator-v{PROMETHEUS_OPERATOR_VERSION}"
    target.mkdir(parents=True, exist_ok=True)
    for kind in PROMETHEUS_OPERATOR_KINDS:
        document = yaml.safe_load((crd_dir / f"monitoring.coreos.com_{kind}.yaml").read_text())
        (version,) = [v for v in document["spec"]["versions"] if v["name"] == "v1"]
        schema = {
            "$schema": "http://json-schema.org/draft-04/schema#",
            **version["schema"]["openAPIV3Schema"],
        }
        text = json.dumps(_strip_descriptions(schema), indent=1, sort_keys=True) + "\n"
        (target / f"{kind}-monitoring-v1.json").write_text(text)


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--kubernetes-validate", type=Path, help="the installed kubernetes_validate package")
    parser.add_argument("--keda-crd", type=Path, help="keda.sh_scaledobjects.yaml of the KEDA release")
    parser.add_argument(
        "--prometheus-operator-crds", type=Path,
        help="example/prometheus-operator-crd/ of the prometheus-operator release",
    )  # fmt: skip
    args = parser.parse_args()
    if args.kubernetes_validate:
        vendor_kubernetes(args.kubernetes_validate)
    if args.keda_crd:
        vendor_keda(args.keda_crd)
    if args.prometheus_operator_crds:
        vendor_prometheus_operator(args.prometheus_operator_crds)


if __name__ == "__main__":
    main()
