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
import datetime
from pathlib import Path

import numpy as np

from fleetopt.api import profile_search_path
from fleetopt.api.calibrate import engine_terms
from fleetopt.core.calibrate import fit_iteration_model, leave_one_out_errors
from fleetopt.errors import ValidationError
from fleetopt.io.measurements import Measurements, RowFilter, measured_profile_yaml, read_measurements

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = ROOT.parent / "shared" / "reference" / "silicon" / "measured-ttft-tpot.csv"
#: vLLM's default max_num_batched_tokens for its OpenAI server on GPUs with ≥ 70 GiB that are not
#: A100 (vllm/engine/arg_utils.py, EngineArgs._set_default_args), and its default max_num_seqs there.
VLLM_CHUNK_TOKENS = 8192
VLLM_MAX_NUM_SEQS = 1024
LLAMA = "meta-llama/Llama-3.1-70B"

# profile name, model profile, GPU profile, CSV system, TP, CSV model_path, CSV precision, weight dtype
TARGETS = (
    (
        "llama-3.1-70b-fp8-h100-80gb-tp8-vllm",
        "llama-3.1-70b",
        "h100-80gb",
        "h100_sxm",
        8,
        LLAMA,
        "fp8",
        "fp8",
    ),
    (
        "llama-3.1-70b-fp8-h100-80gb-tp4-vllm",
        "llama-3.1-70b",
        "h100-80gb",
        "h100_sxm",
        4,
        LLAMA,
        "fp8",
        "fp8",
    ),
    ("llama-3.1-70b-fp8-h200-tp8-vllm", "llama-3.1-70b", "h200", "h200_sxm", 8, LLAMA, "fp8", "fp8"),
    ("llama-3.1-70b-fp8-h200-tp4-vllm", "llama-3.1-70b", "h200", "h200_sxm", 4, LLAMA, "fp8", "fp8"),
    ("llama-3.1-70b-fp8-b200-tp8-vllm", "llama-3.1-70b", "b200", "b200_sxm", 8, LLAMA, "fp8", "fp8"),
    ("llama-3.1-70b-fp8-b200-tp4-vllm", "llama-3.1-70b", "b200", "b200_sxm", 4, LLAMA, "fp8", "fp8"),
    # the CSV leaves the precision of these rows blank: the model's BF16 weights
    ("qwen3-32b-h100-80gb-tp8-vllm", "qwen3-32b", "h100-80gb", "h100_sxm", 8, "Qwen/Qwen3-32B", "", None),
    ("qwen3-32b-h100-80gb-tp4-vllm", "qwen3-32b", "h100-80gb", "h100_sxm", 4, "Qwen/Qwen3-32B", "", None),
)
BACKEND = "vllm"


def _median_max(errors: np.ndarray) -> tuple[float, float]:
    return round(float(np.median(np.abs(errors))), 1), round(float(np.abs(errors).max()), 1)


def measurements_for(path: Path, system: str, tp: int, model: str, precision: str) -> Measurements:
    return read_measurements(
        [path], RowFilter(system=system, backend=BACKEND, model=model, tp=tp, precision=precision)
    )


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
    refusals = []
    for name, model, gpu, system, tp, csv_model, precision, weight_dtype in TARGETS:
        measurements = measurements_for(args.csv, system, tp, csv_model, precision)
        terms = engine_terms(
            model, gpu, tp, weight_dtype, VLLM_CHUNK_TOKENS, VLLM_MAX_NUM_SEQS, profile_search_path(None),
            measurements,
        )  # fmt: skip
        try:
            fit_iteration_model(measurements.benchmark, terms, intervals=False)
        except ValidationError as refusal:  # reported, and the profile written all the same (below)
            refusals.append(f"{name}: {refusal}")
        fit = fit_iteration_model(measurements.benchmark, terms, require_identified=False)
        loo = leave_one_out_errors(measurements.benchmark, terms, fit)

        def interval(k: int, factor: float, fit=fit) -> str:  # noqa: ANN001
            return f" [{fit.intervals_s[k][0] * factor:.3g}–{fit.intervals_s[k][1] * factor:.3g}]"

        tpot, ttft = _median_max(fit.tpot_pct_errors), _median_max(fit.ttft_pct_errors)
        loo_tpot, loo_ttft = _median_max(loo[0])[0], _median_max(loo[1])[0]
        cells = (
            f"`{name}`", str(fit.rows), f"{fit.iteration_base_s * 1e3:.2f}{interval(0, 1e3)} ms",
            f"{fit.iteration_per_slot_s * 1e3:.3f}{interval(1, 1e3)} ms",
            f"{fit.prefill_per_token_s * 1e6:.1f}{interval(2, 1e6)} µs",
            f"{fit.ttft_overhead_s * 1e3:.1f}{interval(4, 1e3)} ms", f"{tpot[0]}% / {tpot[1]}%",
            f"{ttft[0]}% / {ttft[1]}%",
            f"{loo_tpot}% / {loo_ttft}%",
        )  # fmt: skip
        print("| " + " | ".join(cells) + " |")
        if args.write:
            concurrencies = sorted({int(c) for c in measurements.benchmark.concurrency})
            dtype = (weight_dtype or "bf16").upper()
            description = (
                f"vLLM, {csv_model} with {dtype} weights on {tp}x {system}, concurrency "
                f"{', '.join(map(str, concurrencies))}, from NVIDIA aiconfigurator's silicon_sample.csv "
                f"(Apache-2.0, commit 095f58a51c4c); max_num_batched_tokens {VLLM_CHUNK_TOKENS} and "
                f"max_num_seqs {VLLM_MAX_NUM_SEQS} are vLLM's defaults on this GPU (vllm/engine/arg_utils.py)"
            )
            text = measured_profile_yaml(
                title=f"{csv_model}, {dtype} weights, on {tp}x {gpu} with vLLM: a measured calibration.",
                model=model, gpu=gpu, tensor_parallel=tp, fit=fit, leave_one_out=loo,
                measurements=measurements, description=description, date=datetime.date.today().isoformat(),
                max_num_seqs=VLLM_MAX_NUM_SEQS, weight_dtype=weight_dtype,
            )  # fmt: skip
            (ROOT / "profiles" / "serving" / f"{name}.yaml").write_text(text)
    for refusal in refusals:
        print(f"\n{refusal}")


if __name__ == "__main__":
    main()
