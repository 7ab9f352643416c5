"""``fleetopt drift`` through the CLI: the three CI scenarios, the formats, every bad-input path (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.core.workload_stats import ks_distance
from fleetopt.defaults import PAPER_SERVING
from fleetopt.io.workloads import load_workload

runner = CliRunner()
PLANNED_RATE = 200.0


def _drift(*args: str):
    return runner.invoke(app, ["drift", *args])


def _json(result) -> dict:
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> dict[str, Path]:
    """Two plans of azure-2023-conv at a 500 ms SLO: at 200 req/s (two pools) and at the observed rate."""
    folder = tmp_path_factory.mktemp("plans")
    paths = {"two_pool": folder / "plan.yaml", "observed": folder / "observed.json"}
    for path, extra in ((paths["two_pool"], ["--rate", "200"]), (paths["observed"], [])):
        result = runner.invoke(
            app,
            [
                "plan",
                "--cdf",
                "azure-2023-conv",
                "--slo",
                "500ms",
                "--service-model",
                "lockstep",
                "--serving",
                "llama-3-70b-a100-80gb-tp8",
                "--rate-basis",
                "mean",
                *extra,
                "--output",
                str(path),
            ],
        )
        assert result.exit_code == 0, result.output
    return paths


@pytest.fixture(scope="module")
def same(plans) -> dict:
    result = _drift(
        "--plan", str(plans["two_pool"]), "--cdf", "azure-2023-conv", "--rate", "200", "-f", "json"
    )
    assert result.exit_code == 0, result.output
    return _json(result)


# -------------------------------------------------------------------------------------------- scenario 1


def test_same_workload_same_rate_fits(same, plans) -> None:
    planned = yaml.safe_load(plans["two_pool"].read_text())
    assert same["verdict"] == "fits" and same["exit_code"] == 0 and same["reasons"] == []
    assert same["today"]["arrival_rate_origin"] == "given"
    for name in ("short", "long"):
        pool, plan_pool = same["fit"]["pools"][name], planned["best"]["pools"][name]
        assert pool["utilization"] == pytest.approx(plan_pool["utilization"], rel=1e-12)
        assert pool["p99_ttft_s"] == pytest.approx(plan_pool["p99_ttft_s"], rel=1e-12)
        assert pool["ttft_headroom_s"] == pytest.approx(0.5 - plan_pool["p99_ttft_s"])
    assert same["replan"]["gpu_change"] == 0 and same["replan"]["cost_change"] == 0.0
    assert same["shift"]["ks_total_tokens"] == {
        "lower": 0.0, "upper": 0.0, "estimate": 0.0, "resolution": pytest.approx(0.001), "exact": True,
    }  # fmt: skip
    assert same["shift"]["alpha"]["change"] == 0.0


def test_observed_rate_plan_fits_the_same_log_and_says_which_rate(plans) -> None:
    result = _drift("--plan", str(plans["observed"]), "--cdf", "azure-2023-conv")
    assert result.exit_code == 0, result.output
    first, second = result.stdout.splitlines()[:2]
    assert first == "FITS: the planned fleet still fits today's workload within tolerance (exit 0)"
    assert "(observed in the log)" in result.stdout.replace("\n", " ")
    assert "one homogeneous pool" in second


# -------------------------------------------------------------------------------------------- scenario 2


def test_the_code_trace_is_drift_with_every_reason(plans) -> None:
    result = _drift(
        "--plan", str(plans["two_pool"]), "--cdf", "azure-2023-code", "--rate", "200", "-f", "json"
    )
    assert result.exit_code == 1, result.output
    data = _json(result)
    checks = {(r["check"], r["pool"]) for r in data["reasons"]}
    assert ("distribution", None) in checks and ("cost", None) in checks
    broken = {name for name, pool in data["fit"]["pools"].items() if not pool["fits"]}
    assert broken and {("fit", name) for name in broken} <= checks
    # the KS bounds bracket the exact distance between the two logs (FACTS-free: both are bundled)
    ks = data["shift"]["ks_total_tokens"]
    exact = ks_distance(load_workload("azure-2023-code"), load_workload("azure-2023-conv"))
    assert ks["lower"] <= exact <= ks["upper"] and ks["upper"] - ks["lower"] <= 0.001 + 1e-12
    message = next(r["message"] for r in data["reasons"] if r["check"] == "distribution")
    assert message == (
        f"the total-token distribution moved: KS distance ≥ {ks['lower']:.3f} "
        f"(estimate {ks['estimate']:.4f} ± 0.0005) > 0.1"
    )
    # α today = F_code(B) of the planned B
    code = load_workload("azure-2023-code")
    assert data["shift"]["alpha"]["today"] == pytest.approx(code.cdf_at(data["plan"]["b_short_tokens"]))


def test_markdown_report_puts_the_verdict_first(plans) -> None:
    result = _drift(
        "--plan", str(plans["two_pool"]), "--cdf", "azure-2023-code", "--rate", "200", "-f", "markdown"
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("### fleetopt drift — **DRIFT: ") and lines[0].endswith(" (exit 1)**")
    assert any(line.startswith("- the total-token distribution moved") for line in lines)
    assert any(line.startswith("| long | 4 × 16 |") for line in lines)
    assert "| workload | planned | today | change |" in lines


# -------------------------------------------------------------------------------------------- scenario 3


def test_thirty_percent_more_traffic_breaks_a_pool(plans, same) -> None:
    rate = 1.3 * PLANNED_RATE
    result = _drift(
        "--plan", str(plans["two_pool"]), "--cdf", "azure-2023-conv", "--rate", f"{rate:g}", "-f", "json"
    )
    assert result.exit_code == 1, result.output
    data = _json(result)
    expected = []
    for name in ("short", "long"):
        rho = same["fit"]["pools"][name]["utilization"] * 1.3  # ρ = λE[S]/(ns) is linear in λ
        assert data["fit"]["pools"][name]["utilization"] == pytest.approx(rho, rel=1e-12)
        if rho >= 1:
            expected.append(
                f"{name} pool: utilization {rho:.3f} > 1: the pool cannot keep up "
                "(its queue and P99 TTFT grow without bound)"
            )
            assert data["fit"]["pools"][name]["unstable"] and data["fit"]["pools"][name]["p99_ttft_s"] is None
        elif rho > 0.85:
            expected.append(f"{name} pool: utilization {rho:.3f} > cap 0.850")
    messages = [r["message"] for r in data["reasons"] if r["check"] == "fit"]
    assert expected and all(m in messages for m in expected)
    assert data["shift"]["arrival_rate_per_s"]["change"] == pytest.approx(0.3)
    assert data["shift"]["ks_total_tokens"]["exact"] is True


def test_headroom_tolerance(plans, same) -> None:
    """The short pool runs at ρ ≈ 0.849 of a 0.85 cap: it cannot absorb 10% more traffic."""
    assert same["fit"]["pools"]["short"]["rate_headroom"] < 0.1
    result = _drift(
        "--plan", str(plans["two_pool"]), "--cdf", "azure-2023-conv", "--rate", "200",
        "--min-headroom", "10%", "-f", "yaml",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    data = yaml.safe_load(result.stdout)
    assert data["headroom_check"]["rate_factor"] == pytest.approx(1.1)
    assert {r["check"] for r in data["reasons"]} == {"headroom"}
    assert any(r["message"].startswith("short pool at +10% traffic: utilization") for r in data["reasons"])


def test_a_cdf_without_timestamps_uses_the_planned_rate(plans) -> None:
    result = _drift("--plan", str(plans["two_pool"]), "--cdf", "lmsys", "-f", "json")
    assert result.exit_code == 1
    data = _json(result)
    assert data["today"]["arrival_rate_origin"] == "planned"
    assert data["today"]["arrival_rate_per_s"] == PLANNED_RATE
    assert data["shift"]["interarrival_scv"]["today"] is None


# -------------------------------------------------------------------------------------------- exit 2


_LOADED: dict[Path, str] = {}


def _broken(tmp_path: Path, source: Path, name: str, edit) -> Path:
    """The plan ``source`` with ``edit`` applied, written as ``name`` (YAML, with libyaml when
    available: the pure-Python dumper made these tests slow)."""
    if source not in _LOADED:
        _LOADED[source] = json.dumps(
            yaml.load(source.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        )
    document = json.loads(_LOADED[source])
    edit(document)
    path = tmp_path / name
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    path.write_text(yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True))
    return path


def _assert_refused(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr == f"Error: {message}\n"
    assert result.stdout == ""
    assert isinstance(result.exception, SystemExit)  # no traceback


def test_truncated_json_plan(tmp_path, plans) -> None:
    text = plans["observed"].read_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    result = _drift("--plan", str(path), "--cdf", "azure-2023-conv")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    assert result.stderr.startswith(f"Error: plan {path}: not valid json (")


def test_truncated_yaml_plan(tmp_path, plans) -> None:
    text = plans["two_pool"].read_text()
    path = tmp_path / "cut.yaml"
    path.write_text(text[: text.index("  arrival_rate_per_s:")])
    result = _drift("--plan", str(path), "--cdf", "azure-2023-conv")
    _assert_refused(
        result,
        f"plan {path}: inputs.arrival_rate_per_s is missing (the file may be truncated); "
        "expected a positive finite number",
    )


def test_incompatible_schema_version(tmp_path, plans) -> None:
    path = _broken(tmp_path, plans["two_pool"], "v3.yaml", lambda d: d.update(schema_version=3))
    _assert_refused(
        _drift("--plan", str(path), "--cdf", "azure-2023-conv"),
        f"plan {path}: schema_version 3 is not supported (this fleetopt reads versions 1, 2); "
        "re-run fleetopt plan --output to regenerate it",
    )


#: Hand edits of a valid two-pool plan and what the one plan reader says of each (drift and
#: simulate both read plans through fleetopt.io.plans.read_plan).
HAND_EDITS = [
    (
        lambda d: d["best"]["pools"]["short"].update(slots_per_instance="many"),
        "best.pools.short.slots_per_instance = 'many' is invalid; expected an integer ≥ 0",
    ),
    (
        lambda d: d["inputs"]["profiles"]["long"].update(kv_capacity_tokens=-5),
        "inputs.profiles.long.kv_capacity_tokens = -5 is invalid; expected an integer ≥ 1",
    ),
    (
        lambda d: d["inputs"]["profiles"]["short"].pop("iteration_base_s"),
        "inputs.profiles.short.iteration_base_s is missing (the file may be truncated); expected a positive "
        "finite number",
    ),
    (
        lambda d: d["inputs"]["workload_fingerprint"].pop("total_tokens_quantiles"),
        "inputs.workload_fingerprint.total_tokens_quantiles is missing (the file may be truncated); "
        "expected a non-empty list of integers",
    ),
    (
        lambda d: d["inputs"].update(gammas=[0.5]),
        "inputs.gammas[0] = 0.5 is invalid; expected a finite number ≥ 1",
    ),
    (
        lambda d: d["best"].update(total_gpus=1),
        "best.total_gpus = 1 does not match the pools' instances × GPUs",
    ),
    (
        lambda d: d["best"]["pools"]["long"].update(serving_profile="other"),
        "best.pools.long.serving_profile = 'other' does not match inputs.profiles.long.serving_name "
        f"{PAPER_SERVING!r}",
    ),
    (
        lambda d: d["best"]["pools"].pop("long"),
        "best.pools = ['short'] is invalid; expected homogeneous; short and long; or pool-1 … pool-K (K ≥ 3)",
    ),
    (
        lambda d: d["best"]["pools"]["short"].update(gpus_per_instance=0),
        "best.pools.short.gpus_per_instance = 0 is invalid; expected an integer ≥ 1",
    ),
    (
        lambda d: d["inputs"].update(ttft_slo_s=float("nan")),
        "inputs.ttft_slo_s = nan is invalid; expected a positive finite number",
    ),
    (
        lambda d: d["best"]["routing"].update(boundaries_tokens=[2048, 4096]),
        "best.routing.boundaries_tokens = [2048, 4096] is invalid; expected 1 boundaries for 2 pools",
    ),
    (
        lambda d: d["inputs"].update(ttft_slo_s=float("inf")),
        "inputs.ttft_slo_s = inf is invalid; expected a positive finite number",
    ),
    (
        lambda d: d["best"]["pools"]["long"].update(instances=-1),
        "best.pools.long.instances = -1 is invalid; expected an integer ≥ 0",
    ),
    (
        lambda d: d.update(schema_version=99),
        "schema_version 99 is not supported (this fleetopt reads versions 1, 2); "
        "re-run fleetopt plan --output to regenerate it",
    ),
    (
        lambda d: d["best"]["pools"].update({"pool-2": d["best"]["pools"].pop("long")}),
        "best.pools = ['pool-2', 'short'] is invalid; expected homogeneous; short and long; or pool-1 … "
        "pool-K (K ≥ 3)",
    ),
    (
        lambda d: d["inputs"].update(service_model="magic"),
        "inputs.service_model = 'magic' is invalid; expected engine or lockstep or fleet-sim",
    ),
    (
        lambda d: d["inputs"].update(max_utilization=1.5),
        "inputs.max_utilization = 1.5 is invalid; expected a number in (0, 1]",
    ),
    (lambda d: d["best"].update(gamma=0.5), "best.gamma = 0.5 is invalid; expected a finite number ≥ 1"),
    (
        lambda d: d["inputs"].update(arrival_rate_per_s="fast"),
        "inputs.arrival_rate_per_s = 'fast' is invalid; expected a positive finite number",
    ),
    (lambda d: d.update(kind="something-else"), "not a fleetopt plan (expected kind: fleetopt-plan)"),
    (
        lambda d: d.pop("best"),
        "best is missing (the file may be truncated); expected a fleet, or null when no fleet is feasible",
    ),
]


@pytest.mark.parametrize(("edit", "message"), HAND_EDITS)
def test_hand_edited_plans_say_what_is_wrong(tmp_path, plans, edit, message) -> None:
    path = _broken(tmp_path, plans["two_pool"], "edited.yaml", edit)
    _assert_refused(_drift("--plan", str(path), "--cdf", "azure-2023-conv"), f"plan {path}: {message}")


@pytest.mark.slow
@pytest.mark.parametrize(("edit", "message"), HAND_EDITS)
def test_simulate_refuses_exactly_the_plans_drift_refuses(tmp_path, plans, edit, message) -> None:
    path = _broken(tmp_path, plans["two_pool"], "edited.yaml", edit)
    result = runner.invoke(app, ["simulate", "--plan", str(path), "--requests", "2000", "--seeds", "1"])
    assert result.exit_code == 1, result.output
    assert result.stderr == f"Error: plan {path}: {message}\n"


def test_the_unedited_plan_is_accepted_by_both(tmp_path, plans) -> None:
    path = _broken(tmp_path, plans["two_pool"], "same.yaml", lambda d: None)
    assert _drift("--plan", str(path), "--cdf", "azure-2023-conv", "--rate", "200").exit_code == 0
    simulated = runner.invoke(app, ["simulate", "--plan", str(path), "--requests", "2000", "--seeds", "1"])
    assert simulated.exit_code == 0, simulated.output


def test_missing_plan_unknown_workload_and_bad_tolerances(tmp_path, plans) -> None:
    missing = tmp_path / "none.yaml"
    _assert_refused(
        _drift("--plan", str(missing), "--cdf", "azure-2023-conv"), f"plan {missing}: no such file"
    )
    result = _drift("--plan", str(plans["two_pool"]), "--cdf", "no-such-workload")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: workload 'no-such-workload' is neither a file nor a bundled workload"
    )
    _assert_refused(
        _drift("--plan", str(plans["two_pool"]), "--cdf", "azure-2023-conv", "--max-ks", "2"),
        "--max-ks: '2' must be in [0, 1] (0% to 100%)",
    )
    _assert_refused(
        _drift("--plan", str(plans["two_pool"]), "--cdf", "azure-2023-conv", "--rate", "0"),
        "--rate: 0 req/s must be positive and finite",
    )
    result = _drift("--plan", str(plans["two_pool"]))
    assert result.exit_code == 2 and "give either --cdf" in result.stderr  # or --prometheus (live)


def test_a_version_1_plan_is_still_read(tmp_path, plans) -> None:
    def as_version_1(document: dict) -> None:
        document["schema_version"] = 1
        document["inputs"].pop("max_pools")
        document.pop("best_by_pool_count")
        for fleet in (document["best"], *document["baselines"].values()):
            fleet.pop("pool_count")
            if fleet["routing"]:
                fleet["routing"].pop("boundaries_tokens")

    path = _broken(tmp_path, plans["two_pool"], "v1.yaml", as_version_1)
    assert _drift("--plan", str(path), "--cdf", "azure-2023-conv", "--rate", "200").exit_code == 0
    simulated = runner.invoke(app, ["simulate", "--plan", str(path), "--requests", "2000", "--seeds", "1"])
    assert simulated.exit_code == 0, simulated.output


@pytest.mark.slow
def test_a_three_pool_plan_is_simulated_and_checked_for_drift(tmp_path) -> None:
    path = tmp_path / "three.yaml"
    planned = runner.invoke(
        app,
        [
            "plan",
            "--cdf",
            "azure-2023",
            "--slo",
            "500ms",
            "--rate",
            "1000",
            "--pools",
            "3",
            "-o",
            str(path),
            "--service-model",
            "lockstep",
            "--serving",
            "llama-3-70b-a100-80gb-tp8",
        ],  # fmt: skip
    )
    assert planned.exit_code == 0, planned.output
    document = yaml.safe_load(path.read_text())
    assert document["best"]["pool_count"] == 3
    assert list(document["best"]["pools"]) == ["pool-1", "pool-2", "pool-3"]
    bounds = document["best"]["routing"]["boundaries_tokens"]
    assert [document["best"]["pools"][f"pool-{k}"]["context_tokens"] for k in (1, 2)] == bounds
    fits = _drift("--plan", str(path), "--cdf", "azure-2023", "--rate", "1000", "-f", "json")
    assert fits.exit_code == 0, fits.output
    assert list(_json(fits)["fit"]["pools"]) == ["pool-1", "pool-2", "pool-3"]
    overloaded = _drift("--plan", str(path), "--cdf", "azure-2023", "--rate", "1500")
    assert overloaded.exit_code == 1
    simulated = runner.invoke(
        app, ["simulate", "--plan", str(path), "--requests", "20000", "--seeds", "1", "-f", "json"]
    )
    assert simulated.exit_code == 0, simulated.output
    assert list(json.loads(simulated.stdout)["pools"]) == ["pool-1", "pool-2", "pool-3"]
