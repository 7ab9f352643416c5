"""`fleetopt plan` through typer's CliRunner: exit codes, exact errors, the document, --output."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app
from fleetopt.io.plans import SCHEMA_VERSION, read_plan

runner = CliRunner()


@pytest.fixture(scope="module")
def azure_plan_json() -> dict:
    result = runner.invoke(
        app, ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_plan_document_has_the_documented_schema(azure_plan_json) -> None:
    document = azure_plan_json
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["inputs"]["arrival_rate_per_s"] == 1000
    assert document["inputs"]["arrival_rate_origin"] == "given"
    best = document["best"]
    for key in ("b_short_tokens", "gamma", "total_gpus", "cost_per_year_usd"):
        assert key in best
    for name in ("short", "long"):
        pool = best["pools"][name]
        keys = ("instances", "gpus", "slots_per_instance", "arrival_rate_per_s", "utilization", "p99_ttft_s")
        for key in (*keys, "binding_constraint"):
            assert key in pool
        assert pool["utilization"] <= 0.85
        assert pool["p99_ttft_s"] <= 0.5
        assert pool["gpus"] == pool["instances"] * pool["gpus_per_instance"]
    assert set(document["baselines"]) == {"homogeneous", "pool_routing", "retrofit"}
    assert best["total_gpus"] <= document["baselines"]["homogeneous"]["total_gpus"]
    assert len(document["grid"]) >= 11
    # $/year = GPUs × $/GPU-hour × 8,760 (the default H100 profile at $3.99, profiles/gpus/h100-80gb.yaml).
    assert document["inputs"]["profiles"]["short"]["gpu_hour_usd"] == 3.99
    assert best["cost_per_year_usd"] == pytest.approx(best["total_gpus"] * 3.99 * 8760)


def test_azure_2023_report_explains_what_binds_and_why(azure_plan_json) -> None:
    result = runner.invoke(app, ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    best = azure_plan_json["best"]
    for name, pool in best["pools"].items():
        assert f"{name}: " in text
        if pool["binding_constraint"] == "utilization":
            assert f"the utilization cap sets {pool['instances']:,} instance(s)" in text
        if pool["slots_binding"] == "ttft":
            assert (
                f"{pool['slots_per_instance']} of the {pool['kv_slot_limit']} slots the KV cache allows"
                in text
            )
        if pool["slots_binding"] == "kv":
            assert f"{pool['slots_per_instance']} slots per instance, the KV limit" in text
    assert "Against the baselines" in text


def test_default_rate_is_observed_for_logs_and_1000_for_cdfs() -> None:
    observed = runner.invoke(app, ["plan", "--cdf", "azure-2023-conv", "--slo", "500ms", "-f", "json"])
    assert observed.exit_code == 0
    inputs = json.loads(observed.stdout)["inputs"]
    assert inputs["arrival_rate_origin"] == "observed"
    assert inputs["arrival_rate_per_s"] == pytest.approx(5.53, abs=0.01)  # FACTS §5
    default = runner.invoke(
        app, ["plan", "--cdf", "lmsys", "--slo", "500ms", "--b-short", "1536", "-f", "json"]
    )
    assert default.exit_code == 0
    inputs = json.loads(default.stdout)["inputs"]
    assert (inputs["arrival_rate_origin"], inputs["arrival_rate_per_s"]) == ("default", 1000.0)


def test_output_writes_a_plan_that_reads_back(tmp_path) -> None:
    path = tmp_path / "plan.yaml"
    result = runner.invoke(
        app,
        ["plan", "--cdf", "azure", "--slo", "0.5s", "--b-short", "4096", "--gamma", "1,1.5", "-o", str(path)],
    )
    assert result.exit_code == 0, result.output
    assert f"plan written to {path}" in result.output
    plan = read_plan(path)
    assert plan.document == yaml.safe_load(path.read_text())
    assert plan.fleet.routing.boundaries_tokens == (4096,)
    assert plan.options.gammas == (1.0, 1.5)
    assert [p.name for p in plan.fleet.pools] == ["short", "long"]
    assert plan.fleet.total_gpus == plan.document["best"]["total_gpus"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--slo", "500"],
            "Error: --slo: '500' is not a duration; write a number with a unit, e.g. 500ms or 0.5s "
            "(units: us, µs, ms, s, min, h, d)",
        ),
        (["--slo", "-5ms"], "Error: --slo: '-5ms' must be a positive, finite duration"),
        (["--slo", "500ms", "--b-short", "4k"], "Error: --b-short: '4k' in '4k' is not a number"),
        (["--slo", "500ms", "--gamma", "0.5"], "Error: gamma: [0.5] — every γ must be ≥ 1"),
        (
            ["--slo", "500ms", "--service-model", "magic"],
            "Error: service model: 'magic' is not one of engine, lockstep, fleet-sim",
        ),
        (
            ["--slo", "500ms", "--rate", "-1"],
            "Error: --rate: -1 req/s is not allowed; it must be > 0 and at most 1e+08 req/s",
        ),
        # hostile inputs (issue 17): no traceback, one line naming the input
        (
            ["--slo", "500ms", "--rate", "0"],
            "Error: --rate: 0 req/s is not allowed; it must be > 0 and at most 1e+08 req/s",
        ),
        (
            ["--slo", "500ms", "--rate", "1e308"],
            "Error: --rate: 1e+308 req/s is not allowed; it must be > 0 and at most 1e+08 req/s",
        ),
        (
            ["--slo", "500ms", "--compressibility", "nan"],
            "Error: --compressibility: 'nan' must be in [0, 1] (0% to 100%)",
        ),
        (
            ["--slo", "500ms", "--max-utilization", "0"],
            "Error: --max-utilization: 0 leaves no capacity; it must be in (0, 1] (e.g. 85%)",
        ),
    ],
)
def test_bad_values_exit_1_with_the_exact_error(arguments, message) -> None:
    result = runner.invoke(app, ["plan", "--cdf", "azure", *arguments])
    assert result.exit_code == 1
    assert result.stderr.strip() == message


def test_percentages_are_accepted_where_fractions_are() -> None:
    """--max-utilization 85% is 0.85, as --alpha 80% is 0.8 in the audit."""
    documents = [
        json.loads(
            runner.invoke(
                app, ["plan", "--cdf", "azure", "--slo", "500ms", "--rate", "50", *cap, "-f", "json"]
            ).stdout
        )
        for cap in (["--max-utilization", "85%"], ["--max-utilization", "0.85"])
    ]
    assert documents[0]["inputs"]["max_utilization"] == documents[1]["inputs"]["max_utilization"] == 0.85
    assert documents[0]["best"] == documents[1]["best"]


def test_token_counts_beyond_any_context_are_refused(tmp_path) -> None:
    log = tmp_path / "big.csv"
    log.write_text("input_tokens,output_tokens\n100,10\n99999999999999999999,5\n")
    result = runner.invoke(app, ["plan", "--cdf", str(log), "--slo", "500ms"])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {log}, line 3: input_tokens = 99999999999999999999 is too large "
        "(at most 100,000,000 tokens per request)\n"
    )


def test_unknown_workload_lists_the_bundled_ones() -> None:
    result = runner.invoke(app, ["plan", "--cdf", "no-such-workload", "--slo", "500ms"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: workload 'no-such-workload' is neither a file nor a bundled workload"
    )
    assert "azure-2023" in result.stderr


def test_missing_slo_is_a_usage_error() -> None:
    result = runner.invoke(app, ["plan", "--cdf", "azure"])
    assert result.exit_code == 2
    assert "Missing option '--slo'" in result.output


def test_infeasible_plan_exits_1_and_writes_nothing(tmp_path) -> None:
    path = tmp_path / "plan.json"
    # 20 ms cannot even hold one prefill chunk plus one decode step (≥ 2 × 8.65 ms) for any prompt.
    result = runner.invoke(app, ["plan", "--cdf", "azure", "--slo", "10ms", "-o", str(path)])
    assert result.exit_code == 1
    assert (
        result.stderr.strip() == "Error: no fleet meets the SLO and the utilization cap; nothing was written"
    )
    assert "No fleet meets the SLO" in result.stdout
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_bad_output_suffix_is_refused_before_planning(tmp_path) -> None:
    result = runner.invoke(
        app, ["plan", "--cdf", "azure", "--slo", "500ms", "-o", str(tmp_path / "plan.txt")]
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: --output {tmp_path / 'plan.txt'}: the suffix must be .json, .yaml or .yml (got '.txt')"
    )


def test_gpu_takes_the_model_calibration_at_the_same_tensor_parallel_size() -> None:
    """--gpu h200 with the default (TP 8) profile: the model's H200 calibrations are TP 4 and TP 8;
    the TP 8 one is meant, not an error (issue 17)."""
    document = json.loads(
        runner.invoke(
            app, ["plan", "--cdf", "azure", "--slo", "1s", "--rate", "50", "--gpu", "h200", "-f", "json"]
        ).stdout
    )
    short = document["inputs"]["profiles"]["short"]
    assert short["serving_name"] == "llama-3.1-70b-fp8-h200-tp8-vllm" and short["gpus_per_instance"] == 8


def test_engine_plan_refuses_a_chunk_that_splits_prompts_into_too_many_iterations(tmp_path) -> None:
    """A serving profile with a tiny prefill chunk (found by the deep fuzz: a plan that did not end)
    is one `Error:` line naming the profile, the field, the value and what would work."""
    from fleetopt.core.planner import MAX_ENGINE_PREFILL_ITERATIONS
    from fleetopt.io.data import bundled_dir

    source = bundled_dir("profiles") / "serving" / "llama-3.1-70b-fp8-h100-80gb-tp8-vllm.yaml"
    text = source.read_text(encoding="utf-8")
    text = text.replace("prefill_chunk_tokens: 8192", "prefill_chunk_tokens: 4")
    profile = tmp_path / "tiny-chunk.yaml"
    profile.write_text(text, encoding="utf-8")
    args = ["plan", "--cdf", "azure", "--slo", "2s", "--rate", "20", "--serving", str(profile), "-f", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    longest = 13_107  # the bundled azure CDF's longest prompt
    assert MAX_ENGINE_PREFILL_ITERATIONS == 2048
    assert result.stderr == (
        "Error: serving profile tiny-chunk: prefill_chunk_tokens = 4 splits the workload's longest "
        "prompt (13,107 tokens) into 3,277 prefill iterations; the engine model handles at most 2,048 "
        "(a plan's time grows with their square): use prefill_chunk_tokens ≥ 7 (vLLM's "
        "max_num_batched_tokens) or --service-model lockstep\n"
    )
    assert -(-longest // 4) == 3277 and -(-longest // 7) <= 2048 < -(-longest // 6)
    # lockstep takes the chunk (and with 4-token chunks no fleet meets 2 s: a plan, not a refusal)
    lockstep = runner.invoke(app, [*args, "--service-model", "lockstep"])
    assert lockstep.stderr == "Error: no fleet meets the SLO and the utilization cap\n"
    assert json.loads(lockstep.stdout)["kind"] == "fleetopt-plan"
