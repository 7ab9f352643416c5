"""Issue 31's scenario: calibrate from fixed-batch runs of an outside simulator, before and after.

Vidur (github.com/microsoft/vidur, MIT, commit 7d47513; installed as benchmarks/vidur_judge.py
says) runs Llama-3-70B on 4 × A100 with the iteration costs of
``tests/data/profiles/serving/llama-3-70b-a100-80gb-tp4-vidur.yaml`` (W, H, τ from Vidur's own
profiled operator times, the prompts' attention at τ's rate, the KV-read floor; the substitution of
benchmarks/vidur_driver.py). Each run starts c identical requests together (a fixed batch: every
request of the trace arrives at 0), over concurrency 1–128, inputs 256–8,192 and outputs 128 and
512 (the runs whose KV fits the instance: c·(input + output) ≤ 280,000 tokens), and is written as a
row of aiconfigurator's CSV (mean TTFT, mean TPOT = (E2E − TTFT)/(output − 1)). Then:

* before: the closed-form fit of fleetopt before issue 31 (``fleetopt/core/calibrate.py`` at
  6396550, run from ``git show``), with its benchmark-only overlap term ζ;
* after: ``fleetopt calibrate CSV --protocol batch --model-profile llama-3-70b --gpu-profile
  a100-80gb --tp 4``;

and for each the fitted τ against the engine's isolated prefill (the concurrency-1 run of 8,192
tokens: (TTFT − W − its attention) / 8,192) and the errors on the concurrency-1 rows.

    python benchmarks/calibration_scenario.py --vidur /work/vidur-7d47513 \\
        --vidur-python /work/venv-vidur/bin/python [--csv out.csv] [--profile out.yaml]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from vidur_judge import run_vidur

from fleetopt.core.hardware import iteration_costs
from fleetopt.core.simulate import attention_s_per_token_pair
from fleetopt.io.profiles import load_model, pool_hardware

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROFILES = ROOT / "tests" / "data" / "profiles"
SERVING = "llama-3-70b-a100-80gb-tp4-vidur"
CONCURRENCIES = (1, 8, 32, 128)
INPUTS = (256, 2048, 8192)
OUTPUTS = (128, 512)
KV_TOKENS = 280_000
ROW_PREFIX = "a100_sxm,vidur,meta-llama/Meta-Llama-3-70B,bf16,agg"
HEADER = (
    "system,backend,model_path,precision,mode,isl,osl,batch_size,tp_size,silicon_ttft_ms,silicon_tpot_ms\n"
)


def runs() -> list[tuple[int, int, int]]:
    return [(c, i, o) for o in OUTPUTS for c in CONCURRENCIES for i in INPUTS if c * (i + o) <= KV_TOKENS]


def measure(args, folder: Path, reuse: Path | None = None):
    """(c, isl, osl, mean TTFT s, mean TPOT s) of each run, by Vidur (or read from ``reuse``), the
    profile's iteration costs and its attention cost per token pair."""
    dirs = [PROFILES, ROOT / "profiles"]
    hardware = pool_hardware(SERVING, dirs)
    costs = iteration_costs(hardware)
    flops = load_model(hardware.model_name, dirs).attention_flops_per_token_pair()
    tau_a = attention_s_per_token_pair(costs.per_prefill_token_s, hardware.parameters_active, flops)
    if reuse is not None:
        data = np.loadtxt(reuse, delimiter=",", skiprows=1, usecols=(7, 5, 6, 9, 10), ndmin=2)
        rows = [(int(c), int(i), int(o), t / 1e3, p / 1e3) for c, i, o, t, p in data]
        return rows, costs, tau_a
    rows = []
    for c, isl, osl in runs():
        trace = folder / "trace.csv"
        trace.write_text(
            "arrived_at,num_prefill_tokens,num_decode_tokens\n" + f"0.0,{isl},{osl}\n" * c, encoding="utf-8"
        )
        job = {
            "trace": str(trace), "instances": 1, "slots": max(c, 1), "token_budget": 8192,
            "block_tokens": 16, "kv_blocks": 2 * KV_TOKENS // 16, "watermark": 0.0,
            "context_tokens": isl + osl, "global_scheduler": "round_robin", "replica_scheduler": "sarathi",
            "costs": {
                "w_s": costs.base_s, "h_s": costs.per_decode_s, "tau_s": costs.per_prefill_token_s,
                "tau_attention_s": tau_a, "kv_read_s": costs.kv_read_floor_s_per_token,
            },
            "device": "a100", "tensor_parallel": 4, "output_dir": str(folder / "out"), "seed": 1,
        }  # fmt: skip
        ttft, e2e = run_vidur(job, folder, args, c, with_e2e=True)
        rows.append((c, isl, osl, float(np.mean(ttft)), float(np.mean((e2e - ttft) / (osl - 1)))))
        print(f"c {c:4d} isl {isl:5d} osl {osl:4d}: TTFT {rows[-1][3] * 1e3:8.1f} ms, "
              f"TPOT {rows[-1][4] * 1e3:6.2f} ms", flush=True)  # fmt: skip
    return rows, costs, tau_a


def old_fit(csv: Path):
    """The pre-issue-31 fit (with ζ), from git."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", "6396550:fleetopt/core/calibrate.py"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "old_calibrate.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_calibrate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_calibrate"] = module
    spec.loader.exec_module(module)
    data = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=(5, 6, 7, 9, 10))
    isl, osl, c, ttft, tpot = (data[:, k] / (1e3 if k >= 3 else 1) for k in range(5))
    bench = module.Benchmark(c, isl, osl, ttft, tpot)
    fit = module.fit_iteration_model(bench, 8192)
    return fit, c


def report(label: str, tau_s: float, w_s: float, ttft_errors, tpot_errors, c, isolated_tau_s) -> None:
    alone = c == 1
    print(
        f"| {label} | {tau_s * 1e6:.1f} µs | {(tau_s / isolated_tau_s - 1) * 100:+.1f}% | "
        f"{w_s * 1e3:.2f} ms | "
        f"{np.median(np.abs(tpot_errors)):.1f}% / {np.median(np.abs(ttft_errors)):.1f}% | "
        f"{np.max(np.abs(ttft_errors[alone])):.1f}% |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vidur", type=Path, required=True)
    parser.add_argument("--vidur-python", required=True)
    parser.add_argument("--csv", type=Path, default=None, help="keep the CSV of the runs here")
    parser.add_argument("--profile", type=Path, default=None, help="write the calibrated profile here")
    parser.add_argument("--reuse", action="store_true", help="read the runs from --csv instead of Vidur")
    args = parser.parse_args()
    from fleetopt.api.calibrate import calibrate_from_files

    with tempfile.TemporaryDirectory() as folder:
        csv = args.csv or Path(folder) / "runs.csv"
        rows, costs, tau_a = measure(args, Path(folder), reuse=csv if args.reuse else None)
        csv.write_text(
            HEADER
            + "".join(
                f"{ROW_PREFIX},{i},{o},{c},4,{float(t) * 1e3!r},{float(p) * 1e3!r}\n"
                for c, i, o, t, p in rows
            ),
            encoding="utf-8",
        )
        alone = [r for r in rows if r[0] == 1 and r[1] == max(INPUTS)][0]
        isolated_tau_s = (alone[3] - costs.base_s - tau_a * alone[1] * (alone[1] + 1) / 2) / alone[1]
        print(
            f"\nisolated prefill: {alone[1]:,} tokens alone take {alone[3] * 1e3:.0f} ms; τ = "
            f"{isolated_tau_s * 1e6:.1f} µs (profile: {costs.per_prefill_token_s * 1e6:.1f} µs)\n"
        )
        print("| fit | τ | vs isolated | W | median TPOT / TTFT error | concurrency-1 TTFT max error |")
        print("|---|---|---|---|---|---|")
        fit, c = old_fit(csv)
        report("before (closed form + ζ)", fit.prefill_per_token_s, fit.iteration_base_s,
               fit.ttft_pct_errors, fit.tpot_pct_errors, c, isolated_tau_s)  # fmt: skip
        run = calibrate_from_files(
            [str(csv)], protocol="batch", model="llama-3-70b", gpu="a100-80gb", tensor_parallel=4,
            weight_dtype="bf16", max_num_seqs=256, output=args.profile, profiles_dir=PROFILES,
        )  # fmt: skip
        fit = run.fit
        report("after (engine, batch protocol)", fit.prefill_per_token_s, fit.iteration_base_s,
               fit.ttft_pct_errors, fit.tpot_pct_errors, run.measurements.benchmark.concurrency,
               isolated_tau_s)  # fmt: skip
        print("\nafter, with 10th–90th percentiles:")
        for k in (0, 1, 2, 4):
            low, high = fit.intervals_s[k]
            print(f"  {fit.fitted[min(k, 3)]}: {fit.parameters[k]:.4g} [{low:.4g}–{high:.4g}]")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
