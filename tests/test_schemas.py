"""The published schemas (``fleetopt schema plan|drift|router``) against the documents the tool
writes and the readers that check them (the observe report and drift reports on live metrics need a
Prometheus: tests/test_observe_prometheus.py checks them against its server).

* every plan, drift report and router file the tool writes validates, checked by an independent
  validator (``jsonschema``, draft 2020-12), over plans of 1, 2 and K pools, every service model,
  infeasible plans, scheduled plans, mean, peak and percentile bases, and drift reports of every
  verdict and reason;
* the schema and the readers agree both ways: random edits of real documents are accepted by the
  reader exactly when the validator accepts them;
* documents read back and write out byte for byte the same; plan files of earlier releases
  (schema versions 1 and 2, ``tests/data/plans``) still read, and drift, simulate and export take
  them; unknown keys are refused naming the file, the field, the value and what is allowed.
"""

from __future__ import annotations

import copy
import csv
import functools
import gzip
import json
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from document_edits import edited, errors, reads  # noqa: E402

from fleetopt.api import check_plan_drift, plan_workload
from fleetopt.cli import app
from fleetopt.core.drift import Tolerances
from fleetopt.io.deploy import read_router, router_from_document
from fleetopt.io.documents import SCHEMAS, document_class, json_schema
from fleetopt.io.documents.plan import PlanDocument, read_plan_document
from fleetopt.io.documents.typed import from_document, to_document
from fleetopt.io.plans import read_plan
from fleetopt.render.export import export_plan
from fleetopt.render.output import dumps

runner = CliRunner()
PAPER = {"service_model": "lockstep", "serving": "llama-3-70b-a100-80gb-tp8"}
OLD_PLANS = sorted((Path(__file__).parent / "data" / "plans").glob("*.yaml.gz"))


@pytest.fixture(scope="module")
def validators() -> dict[str, jsonschema.Draft202012Validator]:
    """Each published schema, as ``fleetopt schema NAME`` prints it, checked against the metaschema."""
    out = {}
    for name in SCHEMAS:
        result = runner.invoke(app, ["schema", name])
        assert result.exit_code == 0, result.output
        schema = json.loads(result.stdout)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)
        out[name] = jsonschema.Draft202012Validator(schema)
    return out


def _yaml(text: str | bytes) -> dict:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _printed(document: dict, fmt: str = "json") -> dict:
    """The document as ``--format json|yaml`` prints it, parsed back."""
    text = dumps(document, fmt)
    return json.loads(text) if fmt == "json" else _yaml(text)


#: Plans that between them write every shape of the document (name → plan_workload arguments).
PLANS = {
    "four pools, lockstep": {
        "workload": "azure-2023", "ttft_slo_s": 0.5, "mean_rate_per_s": 1000, "max_pools": 4, **PAPER,
    },
    "fleet-sim, a CDF, p_c 0.75": {
        "workload": "azure", "ttft_slo_s": 0.5, "mean_rate_per_s": 10, "service_model": "fleet-sim",
        "compressibility": 0.75,
    },
    "infeasible": {"workload": "azure-2023", "ttft_slo_s": 0.02, "mean_rate_per_s": 1000},
    "scheduled": {"workload": "azure-2023", "ttft_slo_s": 0.5, "mean_rate_per_s": 1000,
                  "schedule_window_s": 3600.0},
    "mean basis": {"workload": "azure-2023-conv", "ttft_slo_s": 0.5, "mean_rate_per_s": 200,
                   "rate_basis": "mean", **PAPER},
    "p99 basis, TPOT SLO": {"workload": "azure-2023-code", "ttft_slo_s": 2.0, "mean_rate_per_s": 50,
                            "rate_basis": "p99", "tpot_slo_s": 0.05},
    "one pool": {"workload": "azure-2023-conv", "ttft_slo_s": 2.0, "mean_rate_per_s": 0.5,
                 "b_short_candidates": [2048], **PAPER},
    "two models": {"workload": "azure-2023-conv", "ttft_slo_s": 1.0, "mean_rate_per_s": 100,
                   "service_model": "lockstep", "serving_long": "llama-3-70b-a100-80gb-tp8"},
}  # fmt: skip


@pytest.fixture(scope="module")
def plans() -> dict[str, dict]:
    out = {}
    for name, arguments in PLANS.items():
        arguments = dict(arguments)
        out[name] = plan_workload(arguments.pop("workload"), **arguments).document
    return out


def test_the_plans_cover_every_shape(plans) -> None:
    """The cases above are what they say: K pools, every model, an infeasible plan, a schedule."""
    assert {d["inputs"]["service_model"] for d in plans.values()} == {"engine", "lockstep", "fleet-sim"}
    assert {d["best"]["pool_count"] for d in plans.values() if d["best"]} >= {1, 2, 4}
    assert not plans["infeasible"]["feasible"] and plans["infeasible"]["best"] is None
    assert "schedule" in plans["scheduled"] and "schedule" not in plans["mean basis"]
    assert {d["inputs"]["rate_basis"]["basis"] for d in plans.values()} >= {"mean", "peak", "p99"}
    assert any(d["warnings"] for d in plans.values()) and any(d["notes"] for d in plans.values())


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_every_plan_validates_and_reads_back_the_same(plans, validators, fmt) -> None:
    # YAML is printed by a pure-Python emitter (~0.3 s a plan): three plans cover its types
    names = list(plans) if fmt == "json" else ["scheduled", "infeasible", "one pool"]
    for name in names:
        document = plans[name]
        printed = _printed(document, fmt)
        assert errors(validators["plan"], printed) == [], name
        typed = read_plan_document(printed, f"plan {name}")
        assert to_document(typed) == printed, name  # read, then written: the same document


def test_the_readme_plan_printed_by_the_command_validates(validators) -> None:
    """Done when: the README's plan, a --pools 3 plan and a lockstep plan validate against
    ``fleetopt schema plan``."""
    base = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--format", "json"]
    for extra in ([], ["--pools", "3"], ["--service-model", "lockstep"]):
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert errors(validators["plan"], document) == [], extra
        assert to_document(read_plan_document(document, "plan")) == document


def test_a_plan_with_its_cross_checkreads(plans, validators, tmp_path) -> None:
    """``plan --validate --format json|yaml`` adds the cross-check as ``validation`` (the slow test
    below runs it); the schema and the reader take a plan that carries one."""
    document = _printed(plans["one pool"])
    document["validation"] = {"kind": "fleetopt-validation", "verdict_code": "pass", "pools": {}}
    assert errors(validators["plan"], document) == []
    path = tmp_path / "validated.json"
    path.write_text(json.dumps(document))
    assert read_plan(path).plan_document.validation == document["validation"]


@pytest.mark.slow
def test_a_validated_plan_with_its_simulation_validates(validators, tmp_path) -> None:
    args = ["plan", "--cdf", "azure-2023-conv", "--slo", "500ms", "--rate", "20", "--rate-basis", "mean"]
    args += ["--service-model", "lockstep", "--serving", PAPER["serving"], "--b-short", "4096"]
    result = runner.invoke(
        app, [*args, "--validate", "--sim-requests", "3000", "--sim-seeds", "1", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["validation"]["kind"] == "fleetopt-validation"
    assert errors(validators["plan"], document) == []
    path = tmp_path / "validated.json"
    path.write_text(result.stdout)
    assert read_plan(path).fleet.total_gpus == document["best"]["total_gpus"]


# --- drift reports ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def drift_plans(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("drift")
    out = {}
    for name, extra in (
        ("two pools", []),
        ("short context", ["--long-context", "16384"]),
        ("three pools", ["--pools", "3", "--b-short", "1024,2048,4096", "--gamma", "1,1.5"]),
    ):
        path = folder / f"{name.replace(' ', '-')}.yaml"
        args = ["plan", "--cdf", "azure-2023-conv", "--slo", "500ms", "--rate", "200", "--rate-basis", "mean"]
        args += ["--service-model", "lockstep", "--serving", PAPER["serving"], *extra, "--output", str(path)]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        out[name] = path
    # requests too long for a 16K context, and too slow to prefill within 500 ms anywhere
    log = folder / "long.csv"
    with log.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
        writer.writerows([f"2023-11-16 00:00:{k % 60:02d}.{k:03d}", 60000, 100] for k in range(200))
    out["long log"] = log
    return out


def test_every_drift_verdict_and_reason_validates(drift_plans, validators) -> None:
    cases = [
        ("two pools", "azure-2023-conv", 200.0, Tolerances()),  # fits
        ("two pools", "azure-2023-code", 200.0, Tolerances()),  # cost, distribution, fit
        ("two pools", "azure-2023-conv", 260.0, Tolerances()),  # a pool over its cap
        ("two pools", "azure-2023-conv", 200.0, Tolerances(min_headroom=0.1)),  # no room for +10%
        ("two pools", str(drift_plans["long log"]), 5.0, Tolerances()),  # no feasible re-plan
        ("short context", str(drift_plans["long log"]), 5.0, Tolerances()),  # longer than the context
        ("three pools", "azure-2023-conv", 200.0, Tolerances()),
    ]
    checks, verdicts = set(), set()
    for plan, today, rate, tolerances in cases:
        run = check_plan_drift(drift_plans[plan], today, mean_rate_per_s=rate, tolerances=tolerances)
        for fmt in ("json", "yaml"):
            document = _printed(run.document(str(drift_plans[plan]), today), fmt)
            assert errors(validators["drift"], document) == [], (plan, today)
            assert to_document(from_document(document_class("drift"), document, "drift")) == document
        verdicts.add(document["verdict"])
        checks |= {reason["check"] for reason in document["reasons"]}
    assert verdicts == {"fits", "drift"}
    assert checks == {"context", "fit", "headroom", "replan", "cost", "distribution"}


# --- router files -----------------------------------------------------------------------------------


def test_every_router_file_validates_and_a_minimal_onereads(drift_plans, plans, validators, tmp_path) -> None:
    sources = [read_plan(drift_plans["two pools"]), read_plan(drift_plans["three pools"])]
    for name in ("one pool", "four pools, lockstep", "fleet-sim, a CDF, p_c 0.75"):
        path = tmp_path / f"{name.split(',')[0].replace(' ', '-')}.json"
        path.write_text(dumps(plans[name], "json"))
        sources.append(read_plan(path))
    for plan_file in sources:
        text = export_plan(plan_file, ["router"]).files["router.yaml"]
        document = yaml.safe_load(text)
        assert errors(validators["router"], document) == [], plan_file.source
        assert to_document(from_document(document_class("router"), document, "router")) == document
        (tmp_path / "router.yaml").write_text(text)
        routing, planned = read_router(tmp_path / "router.yaml").routing, plan_file.fleet.routing
        assert routing.boundaries_tokens == planned.boundaries_tokens
        if "compress_and_route" in document:  # (without a band, γ and p_c route nothing)
            assert routing == planned
    minimal = {
        "kind": "fleetopt-router", "schema_version": 1, "budget": {"without_max_tokens": "last_pool"},
        "pools": [{"name": "short", "max_budget_tokens": 4096}, {"name": "long", "max_budget_tokens": 65536}],
    }  # fmt: skip
    assert errors(validators["router"], minimal) == []
    assert router_from_document(minimal, "router r").routing.boundaries_tokens == (4096,)


# --- the schema and the readers agree ------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_plan() -> dict:
    """A plan of every section (three pools, a schedule) with fewer numbers to pick among."""
    run = plan_workload(
        "azure-2023-conv", ttft_slo_s=0.5, mean_rate_per_s=200, b_short_candidates=[2048, 4096],
        gammas=(1.0, 1.5), max_pools=3, schedule_window_s=3600.0, **PAPER,
    )  # fmt: skip
    document = _printed(run.document)
    fingerprint = document["inputs"]["workload_fingerprint"]
    fingerprint["total_tokens_quantile_levels"] = fingerprint["total_tokens_quantile_levels"][::100]
    fingerprint["total_tokens_quantiles"] = fingerprint["total_tokens_quantiles"][::100]
    return document


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema(name))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_plan_reader_accepts_exactly_what_the_schema_accepts(small_plan, data) -> None:
    document = data.draw(edited(small_plan))
    validator = _validator("plan")
    assert reads(PlanDocument, document) == validator.is_valid(document), errors(validator, document)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_drift_and_router_readers_accept_exactly_what_their_schemas_accept(drift_plans, data) -> None:
    name = data.draw(st.sampled_from(["drift", "router"]))
    document = data.draw(edited(_sample_document(drift_plans, name)))
    validator = _validator(name)
    assert reads(document_class(name), document) == validator.is_valid(document), errors(validator, document)


_SAMPLES: dict[str, dict] = {}


def _sample_document(drift_plans: dict[str, Path], name: str) -> dict:
    """A real drift report (with a re-plan and a headroom check) or router file (with a C&R band)."""
    if name not in _SAMPLES:
        plan = drift_plans["two pools"]
        if name == "drift":
            run = check_plan_drift(plan, "azure-2023-code", mean_rate_per_s=200.0,
                                   tolerances=Tolerances(min_headroom=0.1))  # fmt: skip
            _SAMPLES[name] = _printed(run.document(str(plan), "azure-2023-code"))
        else:
            _SAMPLES[name] = yaml.safe_load(export_plan(read_plan(plan), ["router"]).files["router.yaml"])
    return _SAMPLES[name]


def test_the_agreement_test_sees_both_answers(small_plan) -> None:
    """Edits of both kinds exist: some the schema and the reader both accept (a field older files
    lack, a null where null is allowed), some both refuse (else the agreement would say nothing)."""
    validator = _validator("plan")
    pool = next(iter(small_plan["best"]["pools"]))

    def edit(change) -> dict:
        document = copy.deepcopy(small_plan)
        change(document)
        return document

    accepted = [
        small_plan,
        edit(lambda d: d.pop("warnings")),
        edit(lambda d: d["best"]["pools"][pool].update(utilization=None)),
        edit(lambda d: d["inputs"].pop("rate_basis")),
    ]
    refused = [
        edit(lambda d: d["best"]["pools"][pool].update(instances=-1)),
        edit(lambda d: d["best"]["pools"][pool].update(colour="blue")),
        edit(lambda d: d.pop("grid")),
        edit(lambda d: d["inputs"].update(service_model="magic")),
    ]
    for document in accepted:
        assert validator.is_valid(document) and reads(PlanDocument, document)
    for document in refused:
        assert not validator.is_valid(document) and not reads(PlanDocument, document)


# --- unknown keys, old files, round trips through files --------------------------------------------------


def test_an_unknown_key_is_refused_naming_file_field_value_and_what_is_allowed(tmp_path, plans) -> None:
    document = _printed(plans["one pool"])
    document["best"]["pools"]["homogeneous"]["colour"] = "blue"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(document))
    result = runner.invoke(app, ["simulate", "--plan", str(path), "--requests", "1000", "--seeds", "1"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: plan {path}: best.pools.homogeneous.colour = 'blue' is not a known field; "
        "best.pools.homogeneous has only serving_profile, model, gpu, gpus_per_instance, instances,"
    )
    document = _printed(plans["one pool"])
    document["extra"] = 1
    path.write_text(json.dumps(document))
    result = runner.invoke(app, ["export", "--plan", str(path), "--to", "router"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: plan {path}: extra = 1 is not a known field; the document has only "
    )


@pytest.mark.parametrize("old", OLD_PLANS, ids=[p.name for p in OLD_PLANS])
def test_plans_of_earlier_releases_still_read(old, tmp_path, validators) -> None:
    path = tmp_path / old.name.removesuffix(".gz")
    path.write_bytes(gzip.decompress(old.read_bytes()))
    document = _yaml(path.read_text())
    plan_file = read_plan(path)
    assert plan_file.fleet.total_gpus == document["best"]["total_gpus"]
    assert [p.instances for p in plan_file.fleet.pools] == [
        p["instances"] for p in document["best"]["pools"].values()
    ]
    upgraded = to_document(plan_file.plan_document)
    assert errors(validators["plan"], upgraded) == []  # version 1 upgraded; later fields defaulted
    if document["schema_version"] == 2:
        assert errors(validators["plan"], document) == []  # the schema takes what earlier releases wrote
    if old.name.startswith("v1-bc"):  # drift re-plans (a second): once, on the oldest two-pool plan
        drift = runner.invoke(
            app, ["drift", "--plan", str(path), "--cdf", "azure-2023-conv", "--rate", "200"]
        )
        assert drift.exit_code in (0, 1), drift.output  # fits or drifts (the model moved since), but reads
    export = runner.invoke(app, ["export", "--plan", str(path), "--to", "router", "--to", "markdown"])
    assert export.exit_code == 0, export.output


def test_the_old_plans_span_both_versions_and_their_shapes() -> None:
    documents = [_yaml(gzip.decompress(p.read_bytes())) for p in OLD_PLANS]
    assert {d["schema_version"] for d in documents} == {1, 2}
    assert any(d["best"]["b_short_tokens"] is None for d in documents)  # a one-pool best fleet
    assert any("schedule" in d for d in documents) and any("warnings" not in d for d in documents)
    assert any("workload_reader" not in d["inputs"] for d in documents)


def test_yaml_and_json_plan_files_round_trip(tmp_path) -> None:
    """--format yaml, --output .yaml and .json: the same document, read back as written, and every
    command that reads plans takes them."""
    args = ["plan", "--cdf", "azure-2023-conv", "--slo", "500ms", "--rate", "200", "--b-short", "4096"]
    args += ["--rate-basis", "mean", "--service-model", "lockstep", "--serving", PAPER["serving"]]
    printed = runner.invoke(app, [*args, "--format", "yaml"])
    assert printed.exit_code == 0, printed.output
    as_yaml = yaml.safe_load(printed.stdout)
    for suffix in ("yaml", "json"):
        path = tmp_path / f"plan.{suffix}"
        assert runner.invoke(app, [*args, "--output", str(path)]).exit_code == 0
        plan_file = read_plan(path)
        assert plan_file.document == as_yaml
        assert to_document(plan_file.plan_document) == as_yaml
        if suffix == "json":
            continue  # the same document as the YAML file: the commands read both alike
        for command in (
            ["drift", "--plan", str(path), "--cdf", "azure-2023-conv", "--rate", "200"],
            ["simulate", "--plan", str(path), "--requests", "2000", "--seeds", "1", "-f", "json"],
            ["export", "--plan", str(path), "--to", "router", "--to", "markdown"],
        ):
            result = runner.invoke(app, command)
            assert result.exit_code == 0, (command, result.output)


def test_the_schema_command_rejects_an_unknown_document() -> None:
    result = runner.invoke(app, ["schema", "profile"])
    assert result.exit_code == 2
    assert "plan" in result.stderr and "router" in result.stderr


def test_the_planner_docs_outline_every_top_level_field() -> None:
    """docs/planner.md's table of the plan document's keys is the dataclass's fields, in order."""
    import dataclasses
    import re

    text = (Path(__file__).parents[1] / "docs" / "planner.md").read_text(encoding="utf-8")
    section = text[text.index("### Plan schema (version 2)") :]
    keys = re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE)
    assert keys == [f.name for f in dataclasses.fields(PlanDocument)]
