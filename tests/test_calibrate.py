"""Calibration of the iteration model: hand-derived rows, recovery of known parameters, and the
bundled measured profiles reproducing the measurements they were fitted to (docs/profiles.md)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from fleetopt.core.calibrate import PARAMETERS, Benchmark, design_rows, fit_iteration_model, predict
from fleetopt.errors import ValidationError
from fleetopt.io.data import bundled_dir
from fleetopt.io.profiles import load_serving


def test_design_rows_by_hand() -> None:
    """c = 4, isl = 1,000, osl = 100, chunk 512: P = 2, I = 102; c₁ = (100·H + 1000·τ)/102.
    TPOT = W + 4·c₁; TTFT = 3·(W + 3·c₁) + 1000·τ + T0 + ζ·3·1000."""
    tpot, ttft = design_rows(np.array([4.0]), np.array([1000.0]), np.array([100.0]), 512)
    assert tpot[0].tolist() == pytest.approx([1.0, 4 * 100 / 102, 4 * 1000 / 102, tpot[0][3], 0.0, 0.0])
    assert ttft[0][:3].tolist() == pytest.approx([3.0, 9 * 100 / 102, 9 * 1000 / 102 + 1000])
    assert ttft[0][4:].tolist() == [1.0, 3000.0]


def test_fit_recovers_the_parameters_that_generated_the_data() -> None:
    truth = np.array([0.009, 0.0001, 3e-5, 0.0, 0.015, 1.5e-6])
    grid = [(c, i, o) for c in (4, 8, 16, 32, 64) for i, o in ((1024, 1024), (8192, 1024), (1024, 8192))]
    c, isl, osl = (np.array(v, dtype=float) for v in zip(*grid, strict=True))
    benchmark = Benchmark(c, isl, osl, np.ones(c.size), np.ones(c.size))
    tpot, ttft = predict(truth, benchmark, 8192)
    fit = fit_iteration_model(Benchmark(c, isl, osl, ttft, tpot), 8192)
    assert fit.parameters == pytest.approx(truth, rel=1e-6, abs=1e-12)
    assert np.abs(fit.tpot_pct_errors).max() < 1e-6 and np.abs(fit.ttft_pct_errors).max() < 1e-6
    assert PARAMETERS[2] == "prefill_per_token_s"


def test_one_concurrency_cannot_separate_w_from_h() -> None:
    one = np.array([8.0, 8.0])
    benchmark = Benchmark(one, np.array([1024.0, 8192.0]), np.array([1024.0] * 2), np.ones(2), np.ones(2))
    with pytest.raises(ValidationError) as error:
        fit_iteration_model(benchmark, 8192)
    assert str(error.value) == (
        "calibration: 1 distinct concurrency value(s); at least 2 are needed to separate the per-iteration "
        "cost W from the per-sequence cost H"
    )


LLAMA, QWEN = "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B"
BUNDLED = {
    "llama-3.1-70b-fp8-h100-80gb-tp8-vllm": ("h100_sxm", 8, LLAMA, "fp8"),
    "llama-3.1-70b-fp8-h200-tp8-vllm": ("h200_sxm", 8, LLAMA, "fp8"),
    "llama-3.1-70b-fp8-b200-tp8-vllm": ("b200_sxm", 8, LLAMA, "fp8"),
    "llama-3.1-70b-fp8-h100-80gb-tp4-vllm": ("h100_sxm", 4, LLAMA, "fp8"),
    "llama-3.1-70b-fp8-h200-tp4-vllm": ("h200_sxm", 4, LLAMA, "fp8"),
    "llama-3.1-70b-fp8-b200-tp4-vllm": ("b200_sxm", 4, LLAMA, "fp8"),
    "qwen3-32b-h100-80gb-tp8-vllm": ("h100_sxm", 8, QWEN, ""),
    "qwen3-32b-h100-80gb-tp4-vllm": ("h100_sxm", 4, QWEN, ""),
}


def _measured(shared_dir: Path, system: str, tp: int, model: str, precision: str) -> Benchmark:
    path = shared_dir / "reference" / "silicon" / "measured-ttft-tpot.csv"
    with path.open(newline="") as handle:
        rows = [
            r
            for r in csv.DictReader(handle)
            if r["mode"] == "agg" and r["system"] == system and r["backend"] == "vllm"
            and r["model_path"] == model and r["tp_size"] == str(tp)
            and r["precision"] == precision
        ]  # fmt: skip
    assert len(rows) >= 10

    def column(key: str) -> np.ndarray:
        return np.array([float(r[key]) for r in rows])

    return Benchmark(
        column("batch_size"), column("isl"), column("osl"),
        column("silicon_ttft_ms") / 1e3, column("silicon_tpot_ms") / 1e3,
    )  # fmt: skip


@pytest.mark.parametrize("name", list(BUNDLED))
def test_bundled_measured_profile_reproduces_its_measurements(shared_dir, name) -> None:
    """Issue 13's bar: median |error| ≤ 10% for TPOT and ≤ 25% for TTFT on Llama-3.1-70B vLLM rows."""
    serving = load_serving(name, [bundled_dir("profiles")])
    assert serving.calibration == "measured" and serving.fit["rows"] >= 10
    benchmark = _measured(shared_dir, *BUNDLED[name])
    theta = np.array(
        [
            serving.iteration_base_s, serving.iteration_per_slot_s, serving.prefill_per_token_s,
            serving.iteration_per_kv_token_s, serving.ttft_overhead_s,
            serving.fit["benchmark_prefill_overlap_us"] / 1e6,
        ]
    )  # fmt: skip
    tpot, ttft = predict(theta, benchmark, serving.prefill_chunk_tokens)
    tpot_error = np.median(np.abs(tpot / benchmark.tpot_s - 1.0))
    ttft_error = np.median(np.abs(ttft / benchmark.ttft_s - 1.0))
    assert tpot_error <= 0.10 and ttft_error <= 0.25
    # the profile's figures are the fit's (rounded to 4 digits when written)
    assert round(tpot_error * 100, 1) == pytest.approx(serving.fit["tpot_median_abs_pct_error"], abs=0.15)
    assert round(ttft_error * 100, 1) == pytest.approx(serving.fit["ttft_median_abs_pct_error"], abs=0.15)
