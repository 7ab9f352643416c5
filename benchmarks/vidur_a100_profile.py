"""The Llama-3-70B on 4× A100 serving profile, derived from Vidur's published operator times.

Vidur (github.com/microsoft/vidur, MIT, commit 7d47513) publishes profiled times of every linear
operator of Meta-Llama-3-70B on A100 at tensor-parallel 1–8 (``data/profiling/compute/a100/
meta-llama/Meta-Llama-3-70B/mlp.csv``) and of NCCL all-reduce on A100s of a DGX (NVSwitch)
(``data/profiling/network/a100_dgx/all_reduce.csv``). An iteration of T tokens at TP 4
costs, with the median times in ms, 80 layers × (Σ operators(T) + 2 all-reduces of T·8,192·2
bytes). This script fits W + τ·T on the prompt side (T = 512 … 4,096, where both profiles reach)
and W + H·d on the decode side (T = d = 1 … 64) and writes the serving profile the simulator's
policy study and the outside judge use
(``tests/data/profiles/serving/llama-3-70b-a100-80gb-tp4-vidur.yaml``). The attention
core is not profiled there (its CSVs are Git LFS objects missing from the public snapshot): a
prompt's attention comes from the simulator's own τ_a, a decode's KV read from the bandwidth floor.

    python benchmarks/vidur_a100_profile.py --vidur /path/to/vidur [--write]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

OPERATORS = (
    "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
    "mlp_up_proj", "mlp_act", "mlp_down_proj", "add",
)  # fmt: skip
LAYERS, HIDDEN, TP = 80, 8192, 4
FIXTURE = (
    Path(__file__).resolve().parents[1] / "tests/data/profiles/serving/llama-3-70b-a100-80gb-tp4-vidur.yaml"
)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def iteration_ms(vidur: Path) -> dict[int, float]:
    """Milliseconds of one iteration of T tokens at TP 4, every T Vidur profiled."""
    compute = [
        row
        for row in _rows(vidur / "data/profiling/compute/a100/meta-llama/Meta-Llama-3-70B/mlp.csv")
        if int(row["num_tensor_parallel_workers"]) == TP
    ]
    reduce = sorted(
        (int(row["size"]), float(row["time_stats.all_reduce.median"]))
        for row in _rows(vidur / "data/profiling/network/a100_dgx/all_reduce.csv")
        if row["collective"] == "all_reduce"
        and int(row["num_workers"]) == TP
        and int(row["devices_per_node"]) == TP
    )
    sizes, times = np.array([s for s, _ in reduce], float), np.array([t for _, t in reduce])
    out = {}
    for row in compute:
        tokens = int(row["num_tokens"])
        layer = sum(float(row[f"time_stats.{op}.median"] or 0.0) for op in OPERATORS)
        all_reduce = float(np.interp(tokens * HIDDEN * 2, sizes, times))
        out[tokens] = LAYERS * (layer + 2 * all_reduce)
    return out


def fit(times: dict[int, float]) -> tuple[float, float, float]:
    """(W ms, H ms per decoding sequence, τ µs per prompt token)."""
    big = sorted(t for t in times if 512 <= t <= 4096)  # the all-reduce profile ends at 64 MiB (T = 4,096)
    tau_ms, intercept = np.polyfit(big, [times[t] for t in big], 1)
    small = sorted(t for t in times if t <= 64)
    h_ms, w_ms = np.polyfit(small, [times[t] for t in small], 1)
    return float(w_ms), float(h_ms), float(tau_ms * 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vidur", type=Path, required=True, help="a checkout of microsoft/vidur at 7d47513")
    parser.add_argument("--write", action="store_true", help=f"write {FIXTURE}")
    args = parser.parse_args()
    times = iteration_ms(args.vidur)
    for tokens in (1, 8, 32, 512, 2048, 8192):
        if tokens in times:
            print(f"T = {tokens:5d}: {times[tokens]:8.2f} ms")
    w_ms, h_ms, tau_us = fit(times)
    print(f"W = {w_ms:.2f} ms, H = {h_ms * 1e3:.1f} µs per decoding sequence, τ = {tau_us:.1f} µs per token")
    if args.write:
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(
            "# Llama-3-70B on 4x A100-80GB: a test and benchmark fixture, not a bundled calibration.\n"
            "model: llama-3-70b\ngpu: a100-80gb\ntensor_parallel: 4\ncalibration: derived\n"
            'source: "Vidur (github.com/microsoft/vidur, MIT) commit 7d47513, profiled operator times; '
            'see derivation."\n'
            "derivation: >-\n"
            "  benchmarks/vidur_a100_profile.py: 80 layers x (the median times of Meta-Llama-3-70B's linear\n"
            "  operators at TP 4 on A100, data/profiling/compute/a100/meta-llama/Meta-Llama-3-70B/mlp.csv,\n"
            "  plus\n"
            "  two NCCL all-reduces of T x 8,192 x 2 bytes, data/profiling/network/a100_dgx/\n"
            "  all_reduce.csv), fitted W + tau T for T = 512..4,096 prompt tokens and W + H d for d = 1..64\n"
            "  decoding sequences. The attention core is not in the public profiles.\n"
            f"iteration_base_ms: {w_ms:.2f}\niteration_per_slot_ms: {h_ms:.4f}\n"
            f"prefill_per_token_us: {tau_us:.1f}\n"
            "prefill_chunk_tokens: 8192\ncalibration_context_tokens: 8192\nkv_block_tokens: 16\n"
            "kv_capacity: memory\n"
            "gpu_memory_utilization: 0.9\nactivation_reserve_gb_per_gpu: 10\nmax_num_seqs: 256\n",
            encoding="utf-8",
        )
        print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    main()
