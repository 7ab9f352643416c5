"""``fleetopt calibrate``: the three input formats, --output, --check, and the errors, via CliRunner.

The sample files in tests/data/ were made from known parameters with fleetopt's physical engine
under the closed-loop protocol (tests/data/README.md), so a correct fit recovers them (to the
finite-difference steps of a piecewise-linear fit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()
DATA = Path(__file__).parent / "data"
VLLM_FILES = sorted(str(p) for p in DATA.glob("vllm-bench-*.json"))
GUIDELLM = str(DATA / "guidellm-benchmarks.json")
TRUTH = {
    "iteration_base_ms": 9.0,
    "iteration_per_slot_ms": 0.1,
    "prefill_per_token_us": 30.0,
    "ttft_overhead_ms": 15.0,
}


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("files", [VLLM_FILES, [GUIDELLM]], ids=["vllm-bench", "guidellm"])
def test_fit_recovers_the_parameters_behind_the_sample_files(files) -> None:
    document = _json(runner.invoke(app, ["calibrate", *files, "-f", "json"]))
    assert document["rows"] == 5
    for key, value in TRUTH.items():
        assert document["parameters"][key] == pytest.approx(value, rel=5e-3)
        low, high = document["intervals_p10_p90"][key]
        assert low <= document["parameters"][key] <= high
    assert document["tpot"]["max_abs_pct_error"] < 0.1 and document["ttft"]["max_abs_pct_error"] < 0.1


def test_output_writes_a_profile_the_planner_accepts(tmp_path) -> None:
    path = tmp_path / "measured.yaml"
    args = ["calibrate", *VLLM_FILES, "--output", str(path), "--model-profile", "llama-3.1-70b"]
    args += ["--gpu-profile", "h100-80gb", "--tp", "8", "--max-num-seqs", "512"]
    document = _json(runner.invoke(app, [*args, "-f", "json"]))
    assert document["output"] == str(path)
    profile = yaml.safe_load(path.read_text())
    # with the model and GPU the engine adds the prompts' attention at τ's rate, which these
    # samples (made without it) do not have: τ comes out lower, the planner gets what was fitted
    assert profile["calibration"] == "measured" and 20.0 < profile["prefill_per_token_us"] < 30.0
    assert profile["fit"]["protocols"] == "closed" and profile["fit"]["max_input_tokens"] == 8192
    assert len(profile["fit"]["prefill_per_token_us_p10_p90"]) == 2
    assert profile["fit"]["rows"] == 5 and profile["fit"]["formats"] == "vllm-bench"
    planned = runner.invoke(
        app,
        ["plan", "--cdf", "azure-2023", "--slo", "1s", "--rate", "100", "--serving", str(path), "-f", "json"],
    )
    plan = _json(planned)
    tau_s = profile["prefill_per_token_us"] / 1e6
    assert plan["inputs"]["profiles"]["short"]["prefill_per_token_s"] == pytest.approx(tau_s)
    assert plan["best"]["pools"]["short"]["slots_per_instance"] <= 512


def test_check_reports_the_documented_fields() -> None:
    document = _json(
        runner.invoke(
            app,
            [
                "calibrate",
                GUIDELLM,
                "--check",
                "--profile",
                "llama-3.1-70b-fp8-h100-80gb-tp8-vllm",
                "-f",
                "json",
            ],
        )
    )
    assert document["rows"] == 5
    assert document["concurrency_1"] is None and document["warnings"][0].startswith("no concurrency-1 rows")
    for metric in ("tpot", "ttft"):
        assert set(document[metric]) == {"median_abs_pct_error", "max_abs_pct_error"}
        assert document[metric]["max_abs_pct_error"] >= document[metric]["median_abs_pct_error"] >= 0


def test_shared_csv_rows_without_concurrency_1_do_not_determine_t0(shared_dir) -> None:
    """The shared Llama-3.1-70B rows run at concurrency 4–64 only: T0 (and with it τ) is not
    determined, and no profile is produced; the error says which rows would determine it."""
    csv_path = str(shared_dir / "reference" / "silicon" / "measured-ttft-tpot.csv")
    filters = ["--system", "h200_sxm", "--backend", "vllm", "--model", "meta-llama/Llama-3.1-70B"]
    result = runner.invoke(app, ["calibrate", csv_path, *filters, "--tp", "8", "--precision", "fp8"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: calibration: the rows do not determine T0 (ttft_overhead)")
    assert result.stderr.endswith("add rows at concurrency 1 with a short input (an idle engine's TTFT)\n")


def test_rows_of_several_setups_are_refused(shared_dir) -> None:
    csv_path = str(shared_dir / "reference" / "silicon" / "measured-ttft-tpot.csv")
    result = runner.invoke(app, ["calibrate", csv_path, "--backend", "vllm"])
    assert result.exit_code == 1
    assert "differs from" in result.stderr and "one fit is of one model on one setup" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--check"], "Error: --check needs --profile NAME (the serving profile to check)\n"),
        (
            ["--output", "x.yaml"],
            "Error: --output: a serving profile needs --model-profile, --gpu-profile, --tp\n",
        ),
        (
            ["--system", "h100_sxm"],
            f"Error: {VLLM_FILES[0]}: --system/--backend/--model/--precision select rows of a "
            "measured-results "
            "CSV; this file is vllm-bench (one benchmark per file or entry): drop them or give the CSV\n",
        ),
    ],
)
def test_usage_mistakes_exit_1_with_the_exact_error(args, message) -> None:
    result = runner.invoke(app, ["calibrate", *VLLM_FILES, *args])
    assert result.exit_code == 1
    assert result.stderr == message


def test_one_concurrency_is_refused(tmp_path) -> None:
    result = runner.invoke(app, ["calibrate", VLLM_FILES[1]])
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: calibration: 1 distinct concurrency value(s); at least 2 are needed to separate the "
        "per-iteration cost W from the per-sequence cost H\n"
    )


def test_filter_matching_nothing_and_unknown_files(tmp_path) -> None:
    csv_file = tmp_path / "rows.csv"
    csv_file.write_text(
        "system,backend,model_path,precision,mode,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
        "h100_sxm,vllm,m,fp8,agg,1024,1024,4,8,70,9\n"
    )
    result = runner.invoke(app, ["calibrate", str(csv_file), "--system", "b200_sxm"])
    assert result.exit_code == 1
    assert result.stderr == f"Error: calibrate: no usable rows in {csv_file} (system=b200_sxm)\n"
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    result = runner.invoke(app, ["calibrate", str(other)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {other}: a JSON file that is neither a `vllm bench serve --save-result` result "
        "(no mean_ttft_ms) "
        "nor a GuideLLM benchmarks.json (no benchmarks list)\n"
    )


def _vllm_run(**fields) -> dict:
    """A `vllm bench serve` result (the keys of vllm/benchmarks/serve.py) with made-up numbers."""
    run = {
        "model_id": "example/model", "num_prompts": 100, "request_rate": "inf", "burstiness": 1.0,
        "max_concurrency": 8, "completed": 100, "total_input_tokens": 102400, "total_output_tokens": 25600,
        "mean_ttft_ms": 80.0, "mean_tpot_ms": 10.0,
    }  # fmt: skip
    return run | fields


def test_append_result_json_lines_open_loop_and_batch_runs_are_read_as_such(tmp_path) -> None:
    """`--append-result` writes one run per line (vllm/benchmarks/serve.py); a finite rate is an
    open loop (its cap the concurrency), rate inf without a cap a batch of every prompt."""
    from fleetopt.io.measurements import read_measurements

    runs = [
        _vllm_run(),
        _vllm_run(request_rate=4.0, max_concurrency=None),
        _vllm_run(max_concurrency=None, completed=32, num_prompts=32, total_input_tokens=32768,
                  total_output_tokens=8192),
        _vllm_run(mean_ttft_ms=None, mean_tpot_ms=None, median_ttft_ms=70.0, median_tpot_ms=9.0),
    ]  # fmt: skip
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(run) for run in runs))
    benchmark = read_measurements([path]).benchmark
    assert benchmark.protocol == ("closed", "open", "batch", "closed")
    assert benchmark.concurrency[:3].tolist() == [8.0, float("inf"), 32.0]
    assert benchmark.request_rate_per_s[1] == 4.0 and benchmark.statistic[3] == "median"
    assert benchmark.ttft_s[3] == pytest.approx(0.070) and benchmark.input_tokens.tolist() == [1024.0] * 4


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        (
            [_vllm_run(), _vllm_run(model_id="other/model")],
            "runs.jsonl:2: model_id 'other/model' differs from 'example/model' of runs.jsonl:1: one fit is "
            "of one model on one setup",
        ),
        (
            [_vllm_run(request_rate=2.0, burstiness=0.5)],
            "runs.jsonl, line 1: burstiness = 0.5: only Poisson arrivals",
        ),
        (
            [_vllm_run(mean_tpot_ms=None)],
            "runs.jsonl, line 1: no TTFT and TPOT of one statistic",
        ),
    ],
)
def test_runs_the_fit_cannot_use_are_refused_by_file_line_and_field(tmp_path, runs, message) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(run) for run in runs) + "\n")
    if len(runs) == 1:  # one JSON document: the whole file, not a line of it
        path.write_text(json.dumps(runs[0]) + "\n{}\n")
    result = runner.invoke(app, ["calibrate", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and message in result.stderr.replace(str(tmp_path) + "/", "")


def test_plain_csv_with_rates_and_percentiles(tmp_path) -> None:
    from fleetopt.io.measurements import read_measurements

    path = tmp_path / "runs.csv"
    path.write_text(
        "concurrency,request_rate_per_s,input_tokens,output_tokens,p99_ttft_ms,p99_tpot_ms,mean_itl_ms\n"
        "4,,1024,256,90,12,11\n"
        ",2.5,1024,256,120,14,13\n"
    )
    benchmark = read_measurements([path]).benchmark
    assert benchmark.protocol == ("closed", "open") and benchmark.statistic == ("p99", "p99")
    assert benchmark.tpot_s.tolist() == pytest.approx([0.012, 0.014])
    guide = tmp_path / "guide.json"
    guide.write_text(
        json.dumps({"benchmarks": [{"config": {"strategy": {"type_": "throughput"}}, "metrics": {}}]})
    )
    result = runner.invoke(app, ["calibrate", str(guide)])
    assert result.exit_code == 1
    assert "benchmarks[0]: config.strategy.type_ = 'throughput'" in result.stderr


def _measured_with_interval(tmp_path, widths: tuple[float, float]) -> tuple[Path, dict]:
    path = tmp_path / "measured.yaml"
    args = ["calibrate", *VLLM_FILES, "--output", str(path), "--model-profile", "llama-3.1-70b"]
    _json(runner.invoke(app, [*args, "--gpu-profile", "h100-80gb", "--tp", "8", "-f", "json"]))
    profile = yaml.safe_load(path.read_text())
    for key in ("iteration_base_ms", "prefill_per_token_us"):  # wider than the exact samples' interval
        profile["fit"][f"{key}_p10_p90"] = [widths[0] * profile[key], widths[1] * profile[key]]
    path.write_text(yaml.safe_dump(profile))
    return path, profile


def _corner(tmp_path, profile: dict, side: int) -> str:
    corner = dict(profile)
    for key, value in profile["fit"].items():  # every fitted parameter at its percentile
        if key.endswith("_p10_p90"):
            corner[key.removesuffix("_p10_p90")] = value[side]
    corner["fit"] = {"rows": 5}
    path = tmp_path / f"corner{side}.yaml"
    path.write_text(yaml.safe_dump(corner))
    return str(path)


PLAN = ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "200", "-f", "json"]


def test_plan_on_a_measured_profile_carries_its_calibration_interval(tmp_path) -> None:
    """The fleet at the fitted parameters' 10th and 90th percentiles: the same pools re-sized,
    i.e. what a plan of a profile written at those parameters gives at the best fleet's B and γ."""
    path, profile = _measured_with_interval(tmp_path, (0.9, 1.1))
    plan = _json(runner.invoke(app, [*PLAN, "--serving", str(path)]))
    interval = plan["calibration_interval"]
    assert interval["percentiles"] == [10.0, 90.0] and interval["feasible"] == [True, True]
    low, high = interval["gpus"]
    assert low <= plan["best"]["total_gpus"] <= high and low < high
    fixed = ["--b-short", str(plan["best"]["b_short_tokens"]), "--gamma", str(plan["best"]["gamma"])]
    for side, gpus in ((0, low), (1, high)):
        corner = _corner(tmp_path, profile, side)
        again = _json(runner.invoke(app, [*PLAN, *fixed, "--serving", corner]))
        if again["best"]["b_short_tokens"] is None:  # those pools miss the SLO there: the best fleet there
            again = _json(runner.invoke(app, [*PLAN, "--serving", corner]))
        assert again["best"]["total_gpus"] == gpus
    assert any(note.startswith("calibration: ") for note in plan["notes"])


@pytest.mark.slow
def test_where_the_same_pools_miss_the_slo_the_interval_is_the_best_fleet_there(tmp_path) -> None:
    path, profile = _measured_with_interval(tmp_path, (0.8, 1.25))
    plan = _json(runner.invoke(app, [*PLAN, "--serving", str(path)]))
    again = _json(runner.invoke(app, [*PLAN, "--serving", _corner(tmp_path, profile, 1)]))
    assert plan["calibration_interval"]["gpus"][1] == again["best"]["total_gpus"]


def test_a_pool_longer_than_its_profile_was_measured_says_so() -> None:
    """The bundled measured profiles were fitted on prompts of up to 8,192 tokens (fit.max_input_tokens):
    a long pool of 65,536 tokens is extrapolated, and the plan says so; a short pool inside is not."""
    args = "plan --cdf azure-2023 --slo 1s --rate 100 --long-context 65536 --b-short 4096 -f json"
    plan = _json(runner.invoke(app, args.split()))
    notes = [n for n in plan["notes"] if "was measured with prompts of up to" in n]
    assert notes == [
        "pool long serves requests of up to 65,536 tokens; its profile llama-3.1-70b-fp8-h100-80gb-tp8-vllm "
        "was measured with prompts of up to 8,192 tokens: beyond, its costs are extrapolated from the "
        "shorter prompts measured"
    ]


def test_check_warns_when_the_isolated_prefill_is_off(tmp_path) -> None:
    """Concurrency-1 rows of an engine whose τ is twice the profile's: their TTFT (the isolated
    prefill, 8,192 tokens) is far below the measured one, and --check says so on its own line."""
    import numpy as np

    from fleetopt.core.calibrate import Benchmark, EngineTerms, simulate_rows

    theta = np.array([0.009, 0.0001, 61.4e-6, 0.0, 0.0166])  # the default profile's W, H, T0; 2·τ
    c, isl = np.array([1.0, 1.0, 8.0]), np.array([1024.0, 8192.0, 8192.0])
    rows = Benchmark(c, isl, np.full(3, 256.0), np.ones(3), np.ones(3), ("batch",) * 3)
    tpot, ttft = simulate_rows(theta, rows, EngineTerms(8192))
    path = tmp_path / "runs.csv"
    path.write_text(
        "protocol,concurrency,input_tokens,output_tokens,mean_ttft_ms,mean_tpot_ms\n"
        + "".join(f"batch,{c[k]:g},{isl[k]:g},256,{ttft[k] * 1e3},{tpot[k] * 1e3}\n" for k in range(3))
    )
    args = ["calibrate", str(path), "--check", "--profile", "llama-3.1-70b-fp8-h100-80gb-tp8-vllm"]
    document = _json(runner.invoke(app, [*args, "-f", "json"]))
    assert document["concurrency_1"]["rows"] == 2
    assert [g["input_tokens"] for g in document["by_protocol_and_input"]] == [1024.0, 8192.0]
    assert document["concurrency_1"]["ttft"]["median_abs_pct_error"] > 10
    assert document["warnings"][0].startswith("the isolated-prefill TTFT (concurrency 1) is off by")
