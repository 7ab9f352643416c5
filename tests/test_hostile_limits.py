"""Values a model, an engine or a simulator cannot take (issue 34 items 6 and 7): tensor parallelism
that does not divide the heads, boolean token counts, seeds and rates past what a simulation holds,
more slots than an instance holds, calibration rows faster than the hardware, and a calibrated
profile its own reader refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fleetopt.cli import app

runner = CliRunner()
BUNDLED_SERVING = Path(__file__).resolve().parents[1] / "profiles" / "serving"


# -- tensor parallelism -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "attention", "kv_heads", "formula", "accepted"),
    [
        (3, 64, 8, "gqa", False),  # the case: 64 heads, 8 KV heads, TP 3
        (8, 64, 8, "gqa", True),
        (16, 64, 8, "gqa", True),  # 8 KV heads, each on 2 GPUs (replicated)
        (8, 64, 4, "gqa", True),  # Qwen3-235B-A22B at TP 8: 4 KV heads, each on 2 GPUs
        (4, 48, 6, "gqa", False),  # 48 heads split, but 6 KV heads over 4 GPUs neither split nor copied
        (12, 48, 8, "gqa", False),  # 12 GPUs cannot hold 8 KV heads evenly, nor copies of them
        (3, 32, None, "gqa", False),  # vLLM: "Total number of attention heads (32) must be divisible by …(3)"
        (8, 128, None, "mla", True),  # DeepSeek-V3: the latent is not split by heads
        (6, 128, None, "mla", False),
    ],
)
def test_vllms_tensor_parallel_rule(tp, attention, kv_heads, formula, accepted) -> None:
    from fleetopt.core.kv import tensor_parallel_problem

    assert (tensor_parallel_problem(tp, attention, kv_heads, formula) is None) is accepted


def test_kv_refuses_a_third_of_a_head_per_gpu() -> None:
    """`kv --tp 3` reported a third of a head per GPU for a model of 64 heads and 8 KV heads."""
    result = runner.invoke(
        app, ["kv", "--model", "llama-3.1-70b", "--gpu", "h100-80gb", "--tp", "3", "-c", "8192"]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: fleetopt kv: tensor parallel size 3 does not fit llama-3.1-70b: its 64 attention heads are "
        "not divisible by 3, and vLLM refuses it; use 1, 2, 4, 8, 16, 32, 64 ("
    )


def test_a_serving_profile_at_tp_3_is_refused_before_plan_and_export(tmp_path: Path) -> None:
    """A profile with tensor_parallel: 3 planned, and export wrote --tensor-parallel-size 3."""
    serving = tmp_path / "serving"
    serving.mkdir()
    text = (BUNDLED_SERVING / "llama-3.1-70b-fp8-h100-80gb-tp8-vllm.yaml").read_text()
    assert "\ntensor_parallel: 8\n" in text
    (serving / "tp3.yaml").write_text(text.replace("\ntensor_parallel: 8\n", "\ntensor_parallel: 3\n"))
    result = runner.invoke(
        app, ["plan", "--cdf", "azure", "--slo", "1s", "--rate", "10", "--serving", str(serving / "tp3.yaml")]
    )
    assert result.exit_code == 1
    assert "tensor parallel size 3 does not fit llama-3.1-70b" in result.stderr


def test_every_bundled_serving_profile_has_a_tp_vllm_accepts() -> None:
    from fleetopt.io.data import bundled_dir
    from fleetopt.io.profiles import resolve_serving

    for path in sorted((bundled_dir("profiles") / "serving").glob("*.yaml")):
        serving, model, _ = resolve_serving(path, (bundled_dir("profiles"),))
        assert model.attention_heads is not None, model.name
        from fleetopt.core.kv import tensor_parallel_problem

        problem = tensor_parallel_problem(
            serving.tensor_parallel, model.attention_heads, model.kv_heads, model.kv_formula
        )
        assert problem is None, (path.name, problem)


# -- token columns, seeds, rates, slots -----------------------------------------------------


def _boolean_parquet(path: Path) -> None:
    import duckdb

    connection = duckdb.connect()
    connection.execute(
        "COPY (SELECT true AS input_tokens, 5 AS output_tokens UNION ALL SELECT false, 7) "
        f"TO '{path}' (FORMAT parquet)"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("log.csv", "input_tokens,output_tokens\ntrue,5\nfalse,5\n",
         "line 2: input_tokens = 'true' is not a whole"),
        ("all.jsonl",
         '{"input_length": true, "output_length": 5}\n{"input_length": false, "output_length": 5}\n',
         "line 1: input_length = true is not a whole number of tokens"),
        ("mixed.jsonl",
         '{"input_length": 7, "output_length": 5}\n{"input_length": true, "output_length": 5}\n',
         "line 2: input_length = true is not a whole number of tokens"),
        ("log.parquet", None, "row 1: input_tokens = 'true' is not a whole number of tokens"),
    ],
)  # fmt: skip
def test_a_boolean_is_not_a_token_count(tmp_path: Path, name: str, content: str | None, message: str) -> None:
    """Parquet booleans and JSON true were read as 1 token (DuckDB casts true to 1)."""
    path = tmp_path / name
    if content is None:
        _boolean_parquet(path)
    else:
        path.write_text(content)
    result = runner.invoke(app, ["workload", "show", str(path)])
    assert result.exit_code == 1
    assert result.stderr == f"Error: {path}, {message}" + result.stderr.split(message, 1)[1]
    assert message in result.stderr


@pytest.fixture(scope="module")
def plan(azure_plan_40: Path) -> Path:
    return azure_plan_40


def test_a_hundred_thousand_seeds_are_refused_up_front(plan: Path) -> None:
    """`--seeds 100000` was accepted and ran for minutes."""
    result = runner.invoke(app, ["simulate", "--plan", str(plan), "--seeds", "100000"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: seeds: 100,000 is more than the 100 a simulation runs")


def test_a_vanishing_rate_is_refused_not_a_pass(plan: Path) -> None:
    """`simulate --rate 1e-300` reported P99 TTFT 0.0 ms and met the SLO: every time rounded to 0."""
    result = runner.invoke(app, ["simulate", "--plan", str(plan), "--rate", "1e-300"])
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: arrival rate: 1e-300 req/s spreads 100,000 requests over 1e+305 s, beyond the 1e+09 s"
    )


def test_more_slots_than_an_instance_holds_is_refused(tmp_path: Path, plan: Path) -> None:
    """`slots_per_instance: 100000000` was exported as --max-num-seqs 100000000."""
    document = yaml.safe_load(plan.read_text())
    document["best"]["pools"]["short"]["slots_per_instance"] = 100_000_000
    edited = tmp_path / "plan.yaml"
    edited.write_text(yaml.safe_dump(document, sort_keys=False))
    for command in (
        ["export", "--plan", str(edited), "--to", "vllm"],
        ["drift", "--plan", str(edited), "--cdf", "azure"],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code in (1, 2)
        assert (
            "best.pools.short.slots_per_instance = 100000000 is invalid; expected at most the "
            in result.stderr
        )


# -- calibration -------------------------------------------------------------------------------


def _bench(folder: Path, rows: list[tuple[int, float, float]]) -> list[str]:
    """vllm bench serve results (concurrency, TTFT ms, TPOT ms) of 1,024 in / 1,024 out tokens."""
    paths = []
    for k, (concurrency, ttft_ms, tpot_ms) in enumerate(rows):
        path = folder / f"bench-{k}.json"
        path.write_text(json.dumps({
            "max_concurrency": concurrency, "completed": 100, "total_input_tokens": 102_400,
            "total_output_tokens": 102_400, "mean_ttft_ms": ttft_ms, "mean_tpot_ms": tpot_ms,
        }))  # fmt: skip
        paths.append(str(path))
    return paths


GOOD = [(4, 69.1, 9.52), (16, 90.7, 11.08), (64, 176.9, 17.31)]
# The floors by hand for Llama-3.1-70B (70.6B parameters) on 8 × H100 (3,350 GB/s, 1,979 dense FP8
# TFLOP/s each), weights of unknown precision (the smallest, 4-bit, and the fastest peak):
# TPOT ≥ 70.6e9 · 0.5 B / (8 · 3.35e12 B/s) = 1.317 ms; TTFT of 1,024 tokens ≥ 2 · 70.6e9 · 1,024 /
# (8 · 1.979e15 FLOP/s) = 9.133 ms.
PROFILE = ["--model-profile", "llama-3.1-70b", "--gpu-profile", "h100-80gb", "--tp", "8"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ((4, 1e308, 9.52), "mean TTFT 1e+308 ms is outside what any engine measures (1 µs to 1 h)"),
        ((4, 69.1, 1e-300), "mean TPOT 1e-300 ms is outside what any engine measures (1 µs to 1 h)"),
        (
            (4, 69.1, 0.5),
            "mean TPOT 0.5 ms is below the 1.317 ms llama-3.1-70b (any weights) on 8 × h100-80gb",
        ),
        ((4, 1.0, 9.52), "mean TTFT 1 ms is below the 9.133 ms llama-3.1-70b (any weights) on 8 × h100-80gb"),
    ],
)
def test_physically_impossible_calibration_rows_are_refused(tmp_path: Path, row, message: str) -> None:
    """One row of TTFT 1e308 or TPOT 1e-300 collapsed the fit to zeros."""
    files = _bench(tmp_path, [row, *GOOD[1:]])
    output = tmp_path / "profile.yaml"
    result = runner.invoke(app, ["calibrate", *files, "--output", str(output), *PROFILE])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: bench-0.json: {message}")
    assert not output.exists()


def test_a_calibrated_profile_always_reads_back(tmp_path: Path) -> None:
    """A fit with H = 0 wrote `iteration_per_slot_ms: 1e-06`, which YAML reads as text: calibrate
    --output then refused (or wrote) a profile its own reader rejects. (The fit now refuses rows
    whose H is below the KV-read floor everywhere — they do not determine it —, so the profile of
    such a fit is written directly.)"""
    import datetime

    import numpy as np

    from fleetopt.core.calibrate import Fit
    from fleetopt.io.measurements import measured_profile_yaml, read_measurements

    measurements = read_measurements(_bench(tmp_path, GOOD))
    fit = Fit(0.009, 0.0, 3e-5, 0.0, 0.015, 8192, 3, np.zeros(3), np.zeros(3))
    text = measured_profile_yaml(
        title="flat", model="llama-3.1-70b", gpu="h100-80gb", tensor_parallel=8, fit=fit, leave_one_out=None,
        measurements=measurements, description="flat", date=datetime.date.today().isoformat(),
    )  # fmt: skip
    output = tmp_path / "flat.yaml"
    output.write_text(text)
    assert yaml.safe_load(output.read_text())["iteration_per_slot_ms"] == 1e-6
    planned = runner.invoke(
        app, ["plan", "--cdf", "azure", "--slo", "2s", "--rate", "10", "--serving", str(output)]
    )
    assert planned.exit_code == 0, planned.output
