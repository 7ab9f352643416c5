"""Plans that charge prompts only their uncached tokens (``--prefix-caching``), the hash-log reader
and ``workload cache``: checked against hand sums, brute force and the off plan."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from fleetopt.api.prefix import cached_workload, parse_prefix_caching
from fleetopt.cli import app
from fleetopt.core.engine.model import EngineModel
from fleetopt.core.poolstats import PoolStatistics
from fleetopt.core.prefix import simulate_prefix_cache
from fleetopt.core.workload import workload_from_requests
from fleetopt.errors import ValidationError
from fleetopt.io.prefix_logs import read_hash_log

runner = CliRunner()
SESSIONS = Path(__file__).parent / "data" / "logs" / "mooncake-sessions.jsonl"
PLAN = [
    "plan",
    "--cdf",
    str(SESSIONS),
    "--log-format",
    "mooncake",
    "--long-context",
    "131072",
    "--rate",
    "100",
]


def _rows(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


GOOD = {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}


def test_reader_orders_by_time_and_keeps_each_rows_hashes(tmp_path: Path) -> None:
    rows = [
        {"timestamp": 30, "input_length": 1024, "output_length": 1, "hash_ids": [7, 8]},
        {"timestamp": 10, "input_length": 1, "output_length": 2, "hash_ids": [9]},
        {"timestamp": 30, "input_length": 1025, "output_length": 3, "hash_ids": [7, 8, 11]},
    ]
    log = read_hash_log(_rows(tmp_path / "t.jsonl", rows))
    assert log.stream.input_tokens.tolist() == [1, 1024, 1025]
    assert log.output_tokens.tolist() == [2, 1, 3]
    assert log.stream.offsets.tolist() == [0, 1, 3, 6]
    assert log.stream.hashes.tolist() == [9, 7, 8, 7, 8, 11]
    assert log.arrival_ms.tolist() == [10, 30, 30]


@pytest.mark.parametrize(
    "bad, words",
    [
        ({**GOOD, "hash_ids": [1, "x"]}, 'row 2: hash_ids: [1,"x"] is not a list of integers'),
        ({**GOOD, "hash_ids": [1, 2.5]}, "is not a list of integers"),
        ({**GOOD, "hash_ids": 3}, "hash_ids: 3 is not a list of integers"),
        ({**GOOD, "hash_ids": [1]}, "hash_ids: 1 blocks for 600 prompt tokens (blocks of 512 tokens need 2"),
        ({k: v for k, v in GOOD.items() if k != "hash_ids"}, "row 2: hash_ids: missing"),
        ({**GOOD, "input_length": -4}, "row 2: input_length: -4 is not a whole number"),
        ({k: v for k, v in GOOD.items() if k != "output_length"}, "row 2: output_length: missing"),
        ({**GOOD, "timestamp": "soon"}, "row 2: timestamp:"),
    ],
)
def test_bad_rows_get_one_error_naming_file_row_and_field(tmp_path: Path, bad: dict, words: str) -> None:
    path = _rows(tmp_path / "bad.jsonl", [GOOD, bad])
    with pytest.raises(ValidationError) as caught:
        read_hash_log(path)
    assert str(caught.value).startswith(str(path)) and words in str(caught.value)
    result = runner.invoke(app, ["workload", "cache", str(path)])
    assert result.exit_code == 1 and result.output.startswith("Error: ") and words in result.output


def test_block_size_is_read_from_the_option(tmp_path: Path) -> None:
    path = _rows(tmp_path / "b.jsonl", [{**GOOD, "hash_ids": [1, 2, 3, 4, 5]}])
    assert read_hash_log(path, block_size_tokens=128).stream.block_size_tokens == 128
    with pytest.raises(ValidationError, match="is the block size right"):
        read_hash_log(path)


def test_parse_prefix_caching() -> None:
    assert parse_prefix_caching(None).mode == "off"
    assert parse_prefix_caching("hit-rate:30%").hit_fraction == pytest.approx(0.3)
    for bad in ("on", "hit-rate:1", "hit-rate:-0.1", "hit-rate:"):
        with pytest.raises(ValidationError, match="--prefix-caching"):
            parse_prefix_caching(bad)


def test_pool_moments_carry_the_mean_cached_tokens_exactly() -> None:
    rng = np.random.default_rng(5)
    inputs, outputs = rng.integers(1, 6000, 400), rng.integers(1, 300, 400)
    cached = (inputs * rng.random(400)).astype(np.int64)
    base = workload_from_requests(inputs, outputs, name="w")
    totals = inputs + outputs
    workload = cached_workload(base, totals, inputs - cached, outputs, np.ones(400))
    stats = PoolStatistics(workload, 2048, prompt_levels=True)
    for lo, hi, moments in (
        (0, 3000, stats.range_moments(0, 3000)),
        (0, 3000, stats.short_pool(3000, 1.5, 0.0)),
        (3000, 10**9, stats.long_pool(3000, 1.5, 0.0)),
    ):
        pool = (totals > lo) & (totals <= hi)
        assert moments.mean_cached_tokens == pytest.approx(cached[pool].mean(), rel=1e-12)
        assert moments.mean_total_tokens == pytest.approx(totals[pool].mean(), rel=1e-12)
        assert moments.mean_prefill_iterations == pytest.approx(
            np.ceil((inputs - cached)[pool] / 2048).mean()
        )
    plain = PoolStatistics(base, 2048).range_moments(0, 3000)
    assert plain.mean_cached_tokens == 0.0  # a workload without caching: moments as before
    # a CDF's split gives L = 1 the atom 1 + 1 (in + out above the total): nothing cached either
    from fleetopt.core.workload import workload_from_cdf

    cdf = workload_from_cdf(np.array([1.0, 64.0]), np.array([0.5, 1.0]), name="c")
    assert (cdf.input_tokens + cdf.output_tokens > cdf.total_tokens).any()
    assert PoolStatistics(cdf, 2048)._cached_prefix is None


def test_engine_prompt_work_drops_by_the_cached_tokens() -> None:
    from fleetopt.core.hardware import iteration_costs
    from fleetopt.io.data import profile_search_path
    from fleetopt.io.profiles import pool_hardware

    inputs, outputs = np.array([4000, 8000]), np.array([100, 50])
    base = workload_from_requests(inputs, outputs, name="w")
    cached = cached_workload(base, inputs + outputs, inputs - np.array([3000, 1000]), outputs, np.ones(2))
    hardware = pool_hardware("llama-3.1-8b-h100-80gb-tp1", profile_search_path(None))
    costs = iteration_costs(hardware)
    full = EngineModel.decode_and_prompt_costs(PoolStatistics(base, 512).range_moments(0, 10**6), costs)
    part = EngineModel.decode_and_prompt_costs(PoolStatistics(cached, 512).range_moments(0, 10**6), costs)
    assert full[1] - part[1] == pytest.approx(costs.per_prefill_token_s * 2000, rel=1e-9)


def _plan(*args: str) -> dict:
    result = runner.invoke(app, [*PLAN, *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
def test_off_is_todays_plan_and_a_zero_hit_rate_changes_nothing() -> None:
    today = _plan("--slo", "2s")
    assert _plan("--slo", "2s", "--prefix-caching", "off") == today
    zero = _plan("--slo", "2s", "--prefix-caching", "hit-rate:0")
    assert zero["best"] == today["best"] and zero["prefix_caching"]["gpus_saved"] == 0
    half = _plan("--slo", "2s", "--prefix-caching", "hit-rate:50%")
    assert half["best"]["total_gpus"] < today["best"]["total_gpus"]

    # the fingerprint is of the log as it is (whole prompts); α and β at the plan's own B and γ
    def log_part(plan: dict) -> dict:
        fingerprint = plan["inputs"]["workload_fingerprint"]
        return {k: v for k, v in fingerprint.items() if k not in ("alpha_at_b_short", "beta_at_gamma")}

    assert log_part(half) == log_part(today)


@pytest.mark.slow
@pytest.mark.parametrize("dispatch", ["random", "affinity"])
def test_auto_plans_fewer_gpus_at_hit_rates_its_own_fleet_reaches(dispatch: str) -> None:
    from fleetopt.api.prefix import plan_with_prefix_caching, pool_of_requests, simulate_fleet_caches

    off = _plan("--slo", "10s")
    run = plan_with_prefix_caching(
        str(SESSIONS), parse_prefix_caching("auto"), prefix_dispatch=dispatch, ttft_slo_s=10.0,
        mean_rate_per_s=100.0, long_context_tokens=131072, reader_options={"log_format": "mooncake"},
    )  # fmt: skip
    caching = run.document["prefix_caching"]
    assert run.plan.best.total_gpus < off["best"]["total_gpus"]
    assert caching["gpus_without_caching"] == off["best"]["total_gpus"]
    assert caching["gpus_saved"] == off["best"]["total_gpus"] - run.plan.best.total_gpus
    # independent check: replay the hashes through the planned fleet's caches from scratch
    log = read_hash_log(SESSIONS)
    hits, _ = simulate_fleet_caches(log.stream, log.output_tokens, run.plan.best, dispatch)
    where = pool_of_requests(run.plan.best, log.stream.input_tokens + log.output_tokens)
    for k, name in enumerate(run.plan.best.pool_names):
        mine = where == k
        reached = hits[mine].sum() / log.stream.input_tokens[mine].sum()
        assert caching["pools"][name]["source"] == "simulated"
        assert reached >= caching["pools"][name]["hit_rate"] - 1e-12
    unbounded = simulate_prefix_cache(log.stream).hit_rate
    assert 0 < caching["hit_rate"] <= unbounded


@pytest.mark.slow
def test_auto_without_hashes_is_the_off_plan(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("arrival_offset_ms,input_tokens,output_tokens\n0,100,20\n500,4000,200\n900,300,30\n")
    base = ["plan", "--cdf", str(path), "--slo", "2s", "--rate", "5", "--format", "json"]
    today = json.loads(runner.invoke(app, base).stdout)
    result = runner.invoke(app, [*base, "--prefix-caching", "auto"])
    auto = json.loads(result.stdout)
    assert auto["best"] == today["best"] and "prefix_caching" not in auto
    assert "found neither block hashes nor reported cached tokens" in auto["notes"][-1]


def test_compression_and_caching_together_are_refused() -> None:
    result = runner.invoke(
        app, [*PLAN, "--slo", "2s", "--prefix-caching", "hit-rate:0.3", "--compressibility", "0.5"]
    )
    assert result.exit_code == 1 and "not modelled together" in result.output


@pytest.mark.slow
def test_workload_cache_reports_each_model() -> None:
    result = runner.invoke(
        app,
        [
            "workload",
            "cache",
            str(SESSIONS),
            "--cache-tokens",
            "100000",
            "--instances",
            "1,8",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rates = {(m["cache"], m["instances"], m["dispatch"]): m["hit_rate"] for m in report["models"]}
    assert set(rates) == {
        ("unbounded", 1, "—"),
        ("LRU", 1, "—"),
        ("LRU", 8, "random"),
        ("LRU", 8, "affinity"),
    }
    assert rates["LRU", 1, "—"] <= rates["unbounded", 1, "—"]
    assert rates["LRU", 8, "random"] < rates["LRU", 8, "affinity"] <= rates["unbounded", 1, "—"]
    assert report["models"][1]["cache_tokens_per_instance"] == 100000 // 512 * 512


@pytest.mark.slow
def test_drift_of_a_cached_plan_on_its_own_log_fits(tmp_path: Path) -> None:
    """drift evaluates the deployed fleet at the hit rates the plan assumed (whole prompts would
    overload a fleet sized for cached ones) and fingerprints the log as it is."""
    plan = tmp_path / "plan.yaml"
    result = runner.invoke(app, [*PLAN, "--slo", "10s", "--prefix-caching", "hit-rate:0.3", "-o", str(plan)])
    assert result.exit_code == 0, result.output
    drift = [
        "drift",
        "--plan",
        str(plan),
        "--cdf",
        str(SESSIONS),
        "--log-format",
        "mooncake",
        "--rate",
        "100",
    ]
    result = runner.invoke(app, [*drift, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verdict"] == "fits"


def test_workload_show_prints_the_hit_rates_of_a_hash_log(tmp_path: Path) -> None:
    result = runner.invoke(app, ["workload", "show", str(SESSIONS), "--format", "json"])
    assert result.exit_code == 0, result.output
    models = json.loads(result.stdout)["prefix_cache"]["models"]
    unbounded = simulate_prefix_cache(read_hash_log(SESSIONS).stream).hit_rate
    assert [m["cache"] for m in models] == ["unbounded", "LRU"] and models[0]["hit_rate"] == unbounded
    # hashes that do not fit the block size: a warning, and the statistics as without them
    bad = _rows(tmp_path / "bad.jsonl", [{**GOOD, "hash_ids": [1]}])
    result = runner.invoke(app, ["workload", "show", str(bad), "--format", "json"])
    assert result.exit_code == 0 and "warning: the log's hash_ids were not used" in result.stderr
    assert "prefix_cache" not in json.loads(result.stdout)


@pytest.mark.parametrize("dispatch", ["random", "affinity"])
def test_simulate_charges_a_cached_plan_the_hits_of_its_own_fleet(tmp_path: Path, dispatch: str) -> None:
    """``simulate --plan`` of an ``auto`` plan replays the log's hashes through the caches the plan
    recorded (its fleet's instances and cache sizes, from the document): per pool, the share of
    prompt tokens it charges as cached is what the planned fleet's own caches hit — worked out again
    from the planner's fleet (cache sizes from its utilization) — and at least the rate the plan
    charged."""
    from fleetopt.api.prefix import (
        plan_with_prefix_caching,
        pool_of_requests,
        replayed_caching,
        simulate_fleet_caches,
    )
    from fleetopt.io.plans import read_plan
    from fleetopt.io.workloads import load_workload

    path = tmp_path / "plan.json"
    args = ["plan", "--cdf", str(SESSIONS), "--log-format", "mooncake", "--slo", "10s", "--rate", "100"]
    args += ["--long-context", "131072", "--b-short", "32768", "--gamma", "1", "--prefix-caching", "auto"]
    result = runner.invoke(app, [*args, "--prefix-dispatch", dispatch, "-o", str(path)])
    assert result.exit_code == 0, result.output
    plan = read_plan(path)
    loaded = load_workload(plan.workload, **plan.workload_reader)
    charged = replayed_caching(loaded, plan.workload, plan.document, plan.fleet)
    assert charged.total_weight == loaded.total_weight
    run = plan_with_prefix_caching(
        str(SESSIONS), parse_prefix_caching("auto"), prefix_dispatch=dispatch, ttft_slo_s=10.0,
        mean_rate_per_s=100.0, long_context_tokens=131072, reader_options={"log_format": "mooncake"},
        b_short_candidates=(32768,), gammas=(1.0,),
    )  # fmt: skip
    log = read_hash_log(SESSIONS)
    hits, _ = simulate_fleet_caches(log.stream, log.output_tokens, run.plan.best, dispatch)
    totals = log.stream.input_tokens + log.output_tokens
    caching = plan.document["prefix_caching"]
    where, by_log = pool_of_requests(plan.fleet, charged.total_tokens), pool_of_requests(plan.fleet, totals)
    prompts = charged.total_tokens - charged.output_tokens
    for k, pool in enumerate(plan.fleet.pools):
        mine = where == k
        if not mine.any():
            continue
        share = 1.0 - np.dot(charged.input_tokens[mine], charged.weights[mine]) / np.dot(
            prompts[mine], charged.weights[mine]
        )
        own = hits[by_log == k].sum() / log.stream.input_tokens[by_log == k].sum()
        assert share == pytest.approx(own, rel=1e-12)
        assert share >= caching["pools"][pool.name]["hit_rate"] - 1e-12
