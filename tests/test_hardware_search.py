"""Which hardware for which pool (``plan --hardware``), cost per million tokens, GPU inventory.

Independent truths: brute force over every routing and every assignment of profiles to pools
(each fleet sized by the fixed-hardware planner), hand arithmetic for the token-cost split, and
the plan reader / export / drift run on a plan whose pools are on different hardware.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.core.hardware_search import (
    HardwareSearchPlanner,
    gpus_by_type,
    prompt_work_fraction,
    search_hardware,
    token_costs,
)
from fleetopt.core.planner import Planner, PlanOptions
from fleetopt.core.routing import Routing
from fleetopt.core.workload import workload_from_requests
from fleetopt.errors import ValidationError
from fleetopt.io.documents import json_schema

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_kpool import SMALL, SMALL_LONG, SMALL_MID  # noqa: E402

# Three small instances of one model on three GPU types (different KV, speed, TP, price and
# prefill chunk): the K-pool tests' profiles.
A, B, C = SMALL, SMALL_LONG, SMALL_MID
CANDIDATES = (512, 1024, 2048, 4096)
GAMMAS = (1.0, 2.0)

pairs_strategy = st.lists(
    st.tuples(st.integers(1, 6000), st.integers(1, 1500)), min_size=3, max_size=25
).filter(lambda pairs: max(i + o for i, o in pairs) <= 8192)


def _routings(pool_count: int, p_c: float):
    if pool_count == 1:
        yield Routing.homogeneous()
        return
    for bounds in itertools.combinations(CANDIDATES, pool_count - 1):
        for gamma in GAMMAS:
            if len(bounds) > 1 and math.floor(gamma * bounds[0]) > bounds[1]:
                continue
            yield Routing(bounds, gamma, p_c)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs_strategy, st.floats(0.2, 2.0), st.floats(0.5, 200.0), st.sampled_from([0.0, 1.0]))
def test_the_search_finds_the_cheapest_fleet_over_every_routing_and_hardware_assignment(
    pairs, slo_s, rate, p_c
) -> None:
    inputs, outputs = np.array(pairs).T
    workload = workload_from_requests(inputs, outputs, name="random")
    options = PlanOptions(
        sizing_rate_per_s=rate, ttft_slo_s=slo_s, long_context_tokens=8192, b_short_candidates=CANDIDATES,
        gammas=GAMMAS, compressibility=p_c, service_model="lockstep", max_pools=3,
    )  # fmt: skip
    catalog = (A, B, C)
    plan = HardwareSearchPlanner(workload, catalog, options).plan()
    planners: dict[tuple, Planner] = {}
    best = None
    for count in (1, 2, 3):
        for assignment in itertools.product(catalog, repeat=count):
            planner = planners.setdefault(assignment, Planner(workload, assignment, options))
            for routing in _routings(count, p_c):
                fleet = planner.fleet(routing)
                assert fleet.hardware == assignment
                if fleet.feasible and (
                    best is None or fleet.cost_per_hour_usd < best.cost_per_hour_usd - 1e-9
                ):
                    best = fleet
    if best is None:
        assert plan.best is None
    else:
        assert plan.best is not None
        assert plan.best.cost_per_hour_usd == pytest.approx(best.cost_per_hour_usd, rel=1e-12)
        # the fleet the search returns is what the fixed-hardware planner sizes on its hardware
        again = Planner(workload, plan.best.hardware, options).fleet(plan.best.routing)
        assert again.pools == plan.best.pools


def test_one_profile_in_the_catalog_is_the_fixed_hardware_plan() -> None:
    workload = workload_from_requests(
        np.array([200, 900, 3000, 5000]), np.array([100, 300, 200, 50]), name="w"
    )
    options = PlanOptions(sizing_rate_per_s=20.0, ttft_slo_s=1.0, long_context_tokens=8192, max_pools=3)
    fixed = Planner(workload, (B,), options).plan()
    searched = HardwareSearchPlanner(workload, (B,), options).plan()
    for one, two in zip(
        (fixed.best, fixed.homogeneous, fixed.pool_routing, fixed.retrofit, *fixed.best_by_pool_count),
        (searched.best, searched.homogeneous, searched.pool_routing, searched.retrofit,
         *searched.best_by_pool_count),
        strict=True,
    ):  # fmt: skip
        assert (one is None) == (two is None)
        if one is not None:
            assert one.pools == two.pools and one.hardware == two.hardware and one.routing == two.routing


def test_prompt_work_fraction_and_token_costs_by_hand() -> None:
    """Identical requests (300 prompt, 100 output tokens), one pool: the prompt share is
    τ·L_in / (τ·L_in + H·L_out) (κ = 0); the dollars split by it over the tokens sent."""
    hardware = replace(A, prefill_per_token_s=1e-4, iteration_per_slot_s=0.002)
    workload = workload_from_requests(np.array([300, 300]), np.array([100, 100]), name="w")
    options = PlanOptions(sizing_rate_per_s=10.0, ttft_slo_s=2.0, long_context_tokens=8192)
    planner = Planner(workload, (hardware,), options)
    fleet = planner.homogeneous()
    assert fleet.feasible
    ((_, moments),) = planner.pool_traffic(fleet.routing)
    share = 1e-4 * 300 / (1e-4 * 300 + 0.002 * 100)
    assert prompt_work_fraction(hardware, moments) == pytest.approx(share, rel=1e-12)
    costs = token_costs(fleet, (moments,), workload, mean_rate_per_s=5.0)
    cost = fleet.cost_per_hour_usd
    assert costs.per_million_requests_usd == pytest.approx(cost / (3600 * 5.0) * 1e6)
    assert costs.per_million_input_tokens_usd == pytest.approx(share * cost / (3600 * 5.0 * 300) * 1e6)
    assert costs.per_million_output_tokens_usd == pytest.approx((1 - share) * cost / (3600 * 5.0 * 100) * 1e6)


def test_an_inventory_limit_is_met_or_refused_with_what_the_cheapest_fleet_needs() -> None:
    workload = workload_from_requests(
        np.array([200, 900, 3000, 5000] * 3), np.array([100, 300, 200, 50] * 3), name="w"
    )
    options = PlanOptions(sizing_rate_per_s=30.0, ttft_slo_s=1.0, long_context_tokens=8192)
    planner = HardwareSearchPlanner(workload, (A, B, C), options)
    plan, outcome = search_hardware(planner)
    used = gpus_by_type(plan.best)
    gpu, count = next(iter(used.items()))
    # one GPU fewer of a type the best fleet uses: the answer fits, and costs no less
    limited, limited_outcome = search_hardware(
        HardwareSearchPlanner(workload, (A, B, C), options), max_gpus={gpu: count - 1}
    )
    assert limited_outcome.inventory_method == "pairs"
    assert gpus_by_type(limited.best).get(gpu, 0) <= count - 1
    assert limited.best.cost_per_hour_usd >= plan.best.cost_per_hour_usd - 1e-9
    # a roomy inventory changes nothing
    roomy, roomy_outcome = search_hardware(
        HardwareSearchPlanner(workload, (A, B, C), options), max_gpus={gpu: count}
    )
    assert roomy_outcome.inventory_method == "unconstrained" and roomy.best == plan.best
    with pytest.raises(ValidationError, match="needs"):
        search_hardware(
            HardwareSearchPlanner(workload, (A, B, C), options), max_gpus={"g": 0, "g2": 0, "g3": 0}
        )


def _invoke(*arguments: str):
    return CliRunner().invoke(app, ["plan", "--cdf", "azure", "--slo", "1s", "--rate", "40", *arguments])


def test_plan_hardware_auto_names_each_pools_profile_and_reads_back_through_export_and_drift(
    tmp_path,
) -> None:
    path = tmp_path / "plan.json"
    result = _invoke("--hardware", "auto", "--price", "b200=5.5", "-o", str(path), "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(path.read_text())
    errors = list(jsonschema.Draft202012Validator(json_schema("plan")).iter_errors(document))
    assert errors == []  # the published schema (fleetopt schema plan) holds the new fields
    search = document["hardware_search"]
    assert len(search["catalog"]) == 6 and search["prices_usd_per_gpu_hour"] == {"b200": 5.5}
    best = document["best"]
    for name, pool in best["pools"].items():
        chosen = [o for o in search["pools"][name] if o["chosen"]]
        assert len(chosen) == 1 and chosen[0]["serving_profile"] == pool["serving_profile"]
        cheapest = min(o["cost_per_hour_usd"] for o in search["pools"][name] if o["feasible"])
        assert chosen[0]["cost_per_hour_usd"] == cheapest
        assert document["inputs"]["profiles"]["pools"][name]["serving_name"] == pool["serving_profile"]
    single = document["baselines"]["best_single_hardware"]
    assert best["cost_per_hour_usd"] <= single["cost_per_hour_usd"] + 1e-9
    assert best["cost_per_million_requests_usd"] == pytest.approx(
        best["cost_per_hour_usd"] / (3600 * 40) * 1e6
    )
    exported = CliRunner().invoke(app, ["export", "--plan", str(path), "--to", "vllm"])
    assert exported.exit_code == 0, exported.output
    for pool in best["pools"].values():
        assert f"Serving profile {pool['serving_profile']}." in exported.output
    drift = CliRunner().invoke(app, ["drift", "--plan", str(path), "--cdf", "azure", "--rate", "40"])
    assert drift.exit_code == 0, drift.output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--hardware", "llama-3.1-70b-fp8-h100-80gb-tp8-vllm,llama-3.1-8b-h100-80gb-tp1"), "every pool"),
        (("--hardware", "no-such-profile"), "no-such-profile"),
        (("--hardware", "auto", "--price", "h100-80gb=-2"), "positive number"),
        (("--hardware", "auto", "--price", "h100-80gb=abc"), "positive number"),
        (("--hardware", "auto", "--price", "tpu=2"), "not among"),
        (("--hardware", "auto", "--max-gpus", "h100-80gb=0", "--max-gpus", "h200=0", "--max-gpus", "b200=0"),
         "needs"),
        (("--max-gpus", "h100-80gb=8"), "needs --hardware"),
    ],
)  # fmt: skip
def test_bad_hardware_input_is_one_error_line(arguments, message) -> None:
    result = _invoke(*arguments)
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and message in lines[0], result.output
