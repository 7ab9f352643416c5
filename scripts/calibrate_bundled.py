"""Fit the bundled measured serving profiles from the shared measurements, and print their errors.

    python scripts/calibrate_bundled.py [--csv ../shared/reference/silicon/measured-ttft-tpot.csv] [--write]

For each target below: the CSV's aggregated-serving rows of one (system, backend, model, TP,
precision), the iteration model of :mod:`fleetopt.core.calibrate` fitted by bounded least squares,
its errors on the rows it was fitted on and leave-one-out (each row predicted by a fit of the
others: rows it was not fitted to), and with ``--write`` the profile YAML in profiles/serving/.
The installed tool never reads the CSV; the numbers it needs are in the profiles.
"""

from __future__ import annotations

import argparse
import csv
import datetime
from pathlib import Path

import numpy as np

from fleetopt.core.calibrate import Benchmark, fit_iteration_model, predict

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = ROOT.parent / "shared" / "reference" / "silicon" / "measured-ttft-tpot.csv"
#: vLLM's default max_num_batched_tokens for its OpenAI server on GPUs with ≥ 70 GiB that are not
#: A100 (vllm/engine/arg_utils.py, EngineArgs._set_default_args), and its default max_num_seqs there.
VLLM_CHUNK_TOKENS = 8192
VLLM_MAX_NUM_SEQS = 1024

# profile name, model profile, GPU profile, CSV system, backend, model_path, TP, precision, weight dtype
TARGETS = (
    ("llama-3.1-70b-fp8-h100-80gb-tp8-vllm", "llama-3.1-70b", "h100-80gb", "h100_sxm", 8),
    ("llama-3.1-70b-fp8-h100-80gb-tp4-vllm", "llama-3.1-70b", "h100-80gb", "h100_sxm", 4),
    ("llama-3.1-70b-fp8-h200-tp8-vllm", "llama-3.1-70b", "h200", "h200_sxm", 8),
    ("llama-3.1-70b-fp8-h200-tp4-vllm", "llama-3.1-70b", "h200", "h200_sxm", 4),
    ("llama-3.1-70b-fp8-b200-tp8-vllm", "llama-3.1-70b", "b200", "b200_sxm", 8),
    ("llama-3.1-70b-fp8-b200-tp4-vllm", "llama-3.1-70b", "b200", "b200_sxm", 4),
)
CSV_MODEL = "meta-llama/Llama-3.1-70B"
BACKEND = "vllm"
PRECISION = "fp8"


def load_rows(path: Path, system: str, tp: int) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return [
            row
            for row in csv.DictReader(handle)
            if row["mode"] == "agg"
            and row["system"] == system
            and row["backend"] == BACKEND
            and row["model_path"] == CSV_MODEL
            and row["tp_size"] == str(tp)
            and row["precision"] == PRECISION
        ]


def benchmark_of(rows: list[dict[str, str]]) -> Benchmark:
    def column(key: str) -> np.ndarray:
        return np.array([float(row[key]) for row in rows])

    return Benchmark(
        column("batch_size"), column("isl"), column("osl"),
        column("silicon_ttft_ms") / 1e3, column("silicon_tpot_ms") / 1e3,
    )  # fmt: skip


def subset(benchmark: Benchmark, keep: np.ndarray) -> Benchmark:
    return Benchmark(
        *(
            getattr(benchmark, f)[keep]
            for f in ("concurrency", "input_tokens", "output_tokens", "ttft_s", "tpot_s")
        )
    )


def leave_one_out(benchmark: Benchmark) -> tuple[np.ndarray, np.ndarray]:
    """(TPOT, TTFT) % errors of each row predicted by a fit of the other rows."""
    tpot_errors, ttft_errors = [], []
    for k in range(benchmark.rows):
        keep = np.arange(benchmark.rows) != k
        fit = fit_iteration_model(subset(benchmark, keep), VLLM_CHUNK_TOKENS)
        tpot, ttft = predict(fit.parameters, subset(benchmark, ~keep), VLLM_CHUNK_TOKENS)
        tpot_errors.append((tpot[0] / benchmark.tpot_s[k] - 1.0) * 100.0)
        ttft_errors.append((ttft[0] / benchmark.ttft_s[k] - 1.0) * 100.0)
    return np.array(tpot_errors), np.array(ttft_errors)


def _median_max(errors: np.ndarray) -> tuple[float, float]:
    return round(float(np.median(np.abs(errors))), 1), round(float(np.abs(errors).max()), 1)


def profile_yaml(name, model, gpu, system, tp, fit, loo, rows) -> str:
    tpot_med, tpot_max = _median_max(fit.tpot_pct_errors)
    ttft_med, ttft_max = _median_max(fit.ttft_pct_errors)
    loo_tpot_med, loo_tpot_max = _median_max(loo[0])
    loo_ttft_med, loo_ttft_max = _median_max(loo[1])
    concurrencies = sorted({int(float(r["batch_size"])) for r in rows})
    shapes = sorted({f"{r['isl']}x{r['osl']}" for r in rows})
    return f"""# Llama-3.1-70B, FP8 weights, on {tp}x {gpu} with vLLM: a measured calibration.
model: {model}
gpu: {gpu}
tensor_parallel: {tp}
calibration: measured
source: >-
  Fitted by scripts/calibrate_bundled.py to {len(rows)} measured vLLM results in NVIDIA
  aiconfigurator's silicon_sample.csv (Apache-2.0; ../shared/reference/silicon, rows with
  system {system}, backend vllm, model {CSV_MODEL}, tp_size {tp}, precision fp8, mode agg;
  concurrency {", ".join(map(str, concurrencies))}; input x output tokens {", ".join(shapes)}):
  bounded least squares on relative TPOT and TTFT errors of the closed-loop model in
  fleetopt/core/calibrate.py. Median |error| TPOT {tpot_med}% and TTFT {ttft_med}% on the fitted
  rows, {loo_tpot_med}% and {loo_ttft_med}% leave-one-out. max_num_batched_tokens
  {VLLM_CHUNK_TOKENS} and max_num_seqs {VLLM_MAX_NUM_SEQS} are vLLM's defaults on this GPU
  (vllm/engine/arg_utils.py); KV capacity from memory with vLLM's default 0.9 utilization and a
  10 GB per-GPU activation reserve (assumed).
iteration_base_ms: {fit.iteration_base_s * 1e3:.4g}
iteration_per_slot_ms: {fit.iteration_per_slot_s * 1e3:.4g}
prefill_per_token_us: {fit.prefill_per_token_s * 1e6:.4g}
ttft_overhead_ms: {fit.ttft_overhead_s * 1e3:.4g}
prefill_chunk_tokens: {VLLM_CHUNK_TOKENS}
calibration_context_tokens: 8192
kv_block_tokens: 16
kv_capacity: memory
gpu_memory_utilization: 0.9
activation_reserve_gb_per_gpu: 10
max_num_seqs: {VLLM_MAX_NUM_SEQS}
weight_dtype: fp8
fit:
  source: aiconfigurator silicon_sample.csv (commit 095f58a51c4c), shared as measured-ttft-tpot.csv
  rows: {len(rows)}
  filter: system={system} backend=vllm model={CSV_MODEL} tp={tp} precision=fp8 mode=agg
  method: bounded linear least squares (scipy lsq_linear, BVLS) on relative TPOT and TTFT errors
  date: "{datetime.date.today().isoformat()}"
  benchmark_prefill_overlap_us: {fit.benchmark_prefill_overlap_s * 1e6:.4g}
  tpot_median_abs_pct_error: {tpot_med}
  tpot_max_abs_pct_error: {tpot_max}
  ttft_median_abs_pct_error: {ttft_med}
  ttft_max_abs_pct_error: {ttft_max}
  leave_one_out_tpot_median_abs_pct_error: {loo_tpot_med}
  leave_one_out_tpot_max_abs_pct_error: {loo_tpot_max}
  leave_one_out_ttft_median_abs_pct_error: {loo_ttft_med}
  leave_one_out_ttft_max_abs_pct_error: {loo_ttft_max}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    parser.add_argument("--write", action="store_true", help="write the profiles into profiles/serving/")
    args = parser.parse_args()
    print(
        "| profile | rows | W | H | τ | T0 | TPOT median / max | TTFT median / max "
        + "| leave-one-out TPOT / TTFT median |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, model, gpu, system, tp in TARGETS:
        rows = load_rows(args.csv, system, tp)
        benchmark = benchmark_of(rows)
        fit = fit_iteration_model(benchmark, VLLM_CHUNK_TOKENS)
        loo = leave_one_out(benchmark)
        tpot, ttft = _median_max(fit.tpot_pct_errors), _median_max(fit.ttft_pct_errors)
        loo_tpot, loo_ttft = _median_max(loo[0])[0], _median_max(loo[1])[0]
        cells = (
            f"`{name}`", str(len(rows)), f"{fit.iteration_base_s * 1e3:.2f} ms",
            f"{fit.iteration_per_slot_s * 1e3:.3f} ms", f"{fit.prefill_per_token_s * 1e6:.1f} µs",
            f"{fit.ttft_overhead_s * 1e3:.1f} ms", f"{tpot[0]}% / {tpot[1]}%", f"{ttft[0]}% / {ttft[1]}%",
            f"{loo_tpot}% / {loo_ttft}%",
        )  # fmt: skip
        print("| " + " | ".join(cells) + " |")
        if args.write:
            (ROOT / "profiles" / "serving" / f"{name}.yaml").write_text(
                profile_yaml(name, model, gpu, system, tp, fit, loo, rows)
            )


if __name__ == "__main__":
    main()
