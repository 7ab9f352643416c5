"""Issue 31: the bundled measured Llama-3.1-70B vLLM profiles at long contexts, against an outside
kernel-level reference.

The reference is NVIDIA aiconfigurator's SDK (PyPI ``aiconfigurator`` 0.12.0, Apache-2.0): its
static estimates for ``meta-llama/Meta-Llama-3.1-70B`` (its bundled config of the same
architecture), FP8 GEMMs, BF16 KV cache, backend ``vllm`` (its database version 0.24.0), the
profile's GPU (``h100_sxm``, ``h200_sxm``, ``b200_sxm``) and TP, database mode ``SILICON``: each op
priced from its per-kernel measurement tables (attention, GEMM, all-reduce) or, where it has none,
its empirical formulas, summed over the layers. Two quantities:

* ``prefill``: ``static_ctx`` — one forward pass over ``batch`` prompts of ``input_tokens``
  (aiconfigurator's TTFT, no queueing, no chunking, no API overhead). Its context-attention tables
  stop at 16,384 query tokens; longer prompts are its extrapolation of them.
* ``decode``: ``static_gen`` with 2 output tokens — one decode step of ``batch`` sequences at
  ``input_tokens`` of context (its TPOT; generation-attention tables reach 131,071).

Ours: the profile through the planner's costs (``fleetopt.core.hardware.iteration_costs``: W, H, τ
after the GPU floors, the KV-read floor) and the prompt attention per token pair
(``fleetopt.core.simulate.attention_s_per_token_pair``), run through the simulator's ``physical``
engine (``run_pool_engine``, vLLM's scheduler, chunks of ``prefill_chunk_tokens``) on one idle
instance: ``prefill`` is the time until every prompt of the batch has its first token, without T0
(the API-server overhead a kernel reference does not have; reported apart); ``decode`` is the TPOT of
``batch`` requests whose prompts are all but one token in the prefix cache (so every iteration after
the first token is a decode step of the whole batch). ``prefill`` is also given with τ_a = 0: the
prompt charged τ per token whatever the context, as the analytic ``engine`` model has it.

Grid: inputs 1K–128K, prefill at batch 1 and 4, decode at batch 1, 8, 32 and 128, only where the
profile's KV cache holds the batch. The reference numbers are cached in
``benchmarks/data/aiconfigurator_long_context.csv`` so this runs without aiconfigurator:

    python benchmarks/outside_kernel_check.py             # the comparison, per row and per regime
    python benchmarks/outside_kernel_check.py --markdown  # the tables of docs/profiles.md
    python benchmarks/outside_kernel_check.py --refresh   # regenerate the CSV (aiconfigurator installed)

aiconfigurator is not a fleetopt dependency. To refresh, make it importable next to fleetopt, e.g.
``python3 -m venv /tmp/aic && /tmp/aic/bin/pip install aiconfigurator==0.12.0`` and then
``PYTHONPATH=.:$(echo /tmp/aic/lib/python3*/site-packages) python benchmarks/outside_kernel_check.py
--refresh`` (both environments had numpy 2.4.6; about two minutes on one core).
"""

from __future__ import annotations

import argparse
import csv
import logging
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from fleetopt.api import profile_search_path
from fleetopt.core import crosscheck
from fleetopt.core.hardware import PoolHardware, iteration_costs
from fleetopt.core.pools import DeployablePool
from fleetopt.core.simulate import SimulatedPool, attention_s_per_token_pair, run_pool_engine
from fleetopt.io.profiles import load_model, load_serving, pool_hardware

DATA = Path(__file__).resolve().parent / "data" / "aiconfigurator_long_context.csv"
PROFILES = (
    "llama-3.1-70b-fp8-h100-80gb-tp8-vllm",
    "llama-3.1-70b-fp8-h100-80gb-tp4-vllm",
    "llama-3.1-70b-fp8-h200-tp8-vllm",
    "llama-3.1-70b-fp8-h200-tp4-vllm",
    "llama-3.1-70b-fp8-b200-tp8-vllm",
    "llama-3.1-70b-fp8-b200-tp4-vllm",
)
#: fleetopt GPU profile → aiconfigurator system.
SYSTEMS = {"h100-80gb": "h100_sxm", "h200": "h200_sxm", "b200": "b200_sxm"}
REFERENCE_MODEL = "meta-llama/Meta-Llama-3.1-70B"
BACKEND = "vllm"
INPUTS = (1024, 4096, 8192, 16384, 32768, 65536, 131072)
BATCHES = {"prefill": (1, 4), "decode": (1, 8, 32, 128)}
#: Output tokens of a decode row's simulated requests: the first comes with the last prompt token,
#: the next two from decode steps of the whole batch.
DECODE_OUTPUTS = 3
COLUMNS = (
    "profile", "system", "tensor_parallel", "phase", "input_tokens", "batch", "reference_ms",
    "attention_ms", "silicon_share", "reference", "database_version",
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One reference point (a row of the CSV)."""

    profile: str
    system: str
    tensor_parallel: int
    phase: str
    input_tokens: int
    batch: int
    reference_ms: float
    attention_ms: float
    silicon_share: float
    reference: str
    database_version: str


def read_rows(path: Path = DATA) -> list[Row]:
    """The cached reference rows."""
    with path.open(newline="") as handle:
        return [
            Row(
                r["profile"],
                r["system"],
                int(r["tensor_parallel"]),
                r["phase"],
                int(r["input_tokens"]),
                int(r["batch"]),
                float(r["reference_ms"]),
                float(r["attention_ms"]),
                float(r["silicon_share"]),
                r["reference"],
                r["database_version"],
            )
            for r in csv.DictReader(handle)
        ]


def hardware(profile: str) -> PoolHardware:
    return pool_hardware(profile, profile_search_path(None))


def fits(hw: PoolHardware, phase: str, input_tokens: int, batch: int) -> bool:
    """Whether one instance's KV cache holds the batch (in whole blocks) without preempting."""
    extra = 1 if phase == "prefill" else DECODE_OUTPUTS
    blocks = -(-(input_tokens + extra) // hw.kv_block_tokens)
    return batch * blocks <= hw.kv_capacity_tokens // hw.kv_block_tokens


def simulated_pool(
    hw: PoolHardware, batch: int, context_tokens: int, attention: bool = True
) -> SimulatedPool:
    """One instance of ``batch`` slots as the simulator builds it from a plan's pool, with the
    prompt attention per token pair of the profile's model (0 with ``attention`` false)."""
    pool = crosscheck.simulated_pool(DeployablePool(hw.serving_name, context_tokens, batch, 1, hw))
    flops = load_model(hw.model_name, profile_search_path(None)).attention_flops_per_token_pair()
    tau_a = attention_s_per_token_pair(iteration_costs(hw).per_prefill_token_s, hw.parameters_active, flops)
    return replace(pool, attention_s_per_token_pair=tau_a if attention else 0.0)


def predicted_ms(
    hw: PoolHardware, phase: str, input_tokens: int, batch: int, attention: bool = True
) -> float:
    """Our prefill time (to the batch's last first token, without T0) or decode step, ms."""
    pool = simulated_pool(hw, batch, input_tokens + DECODE_OUTPUTS, attention)
    arrivals, prompts = np.zeros(batch), np.full(batch, input_tokens)
    if phase == "prefill":
        run = run_pool_engine(pool, arrivals, prompts, np.ones(batch, np.int64), "pooled")
        return float(run.first_token_s.max()) * 1e3
    outputs = np.full(batch, DECODE_OUTPUTS)
    run = run_pool_engine(pool, arrivals, prompts, outputs, "pooled", cached=prompts - 1)
    return float(np.mean((run.departure_s - run.first_token_s) / (DECODE_OUTPUTS - 1))) * 1e3


@dataclass(frozen=True)
class Comparison:
    row: Row
    ours_ms: float
    ours_no_attention_ms: float
    fit_max_input_tokens: int

    @property
    def error_pct(self) -> float:
        return (self.ours_ms / self.row.reference_ms - 1.0) * 100.0

    @property
    def no_attention_error_pct(self) -> float:
        return (self.ours_no_attention_ms / self.row.reference_ms - 1.0) * 100.0

    @property
    def regime(self) -> str:
        return "within fit" if self.row.input_tokens <= self.fit_max_input_tokens else "beyond fit"


def compare(rows: list[Row]) -> list[Comparison]:
    out = []
    cache: dict[str, tuple[PoolHardware, int]] = {}
    for row in rows:
        if row.profile not in cache:
            serving = load_serving(row.profile, profile_search_path(None))
            fit = serving.fit or {}
            cache[row.profile] = (hardware(row.profile), int(fit.get("max_input_tokens", 0)))
        hw, fit_max = cache[row.profile]
        ours = predicted_ms(hw, row.phase, row.input_tokens, row.batch)
        bare = predicted_ms(hw, row.phase, row.input_tokens, row.batch, attention=False)
        out.append(Comparison(row, ours, bare, fit_max))
    return out


# -- the reference (aiconfigurator installed) ------------------------------------------------------


def reference_row(profile: str, phase: str, input_tokens: int, batch: int) -> Row:
    """One point from aiconfigurator's SDK (``cli_estimate``, a static mode)."""
    import aiconfigurator
    from aiconfigurator.cli.api import cli_estimate

    hw = hardware(profile)
    system = SYSTEMS[hw.gpu_name]
    result = cli_estimate(
        REFERENCE_MODEL, system, mode="static_ctx" if phase == "prefill" else "static_gen",
        backend_name=BACKEND, database_mode="SILICON", isl=input_tokens, osl=2, batch_size=batch,
        tp_size=hw.gpus_per_instance, gemm_quant_mode="fp8", kvcache_quant_mode="bfloat16",
    )  # fmt: skip
    summary = result.summary
    if phase == "prefill":
        latency, sources, total = (
            summary.get_context_latency_dict(),
            summary.get_context_source_dict(),
            result.ttft,
        )
    else:
        latency, sources = summary.get_generation_latency_dict(), summary.get_generation_source_dict()
        total = result.tpot
    ops = {name: float(ms) for name, ms in latency.items()}
    measured = sum(ms for name, ms in ops.items() if (sources or {}).get(name) == "silicon")
    return Row(
        profile, system, hw.gpus_per_instance, phase, input_tokens, batch, round(float(total), 4),
        round(sum(ms for name, ms in ops.items() if "attention" in name), 4),
        round(measured / sum(ops.values()), 3), f"aiconfigurator {aiconfigurator.__version__} SILICON",
        f"{BACKEND} {result.backend_version}",
    )  # fmt: skip


def refresh(path: Path = DATA) -> None:
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    rows = []
    for profile in PROFILES:
        hw = hardware(profile)
        for phase, batches in BATCHES.items():
            for batch in batches:
                for input_tokens in INPUTS:
                    if fits(hw, phase, input_tokens, batch):
                        rows.append(reference_row(profile, phase, input_tokens, batch))
                        print(rows[-1], file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([[getattr(r, c) for c in COLUMNS] for r in rows])


# -- the report ------------------------------------------------------------------------------------


def _stats(errors: list[float]) -> str:
    e = np.asarray(errors)
    return f"{np.median(np.abs(e)):.0f}% / {np.abs(e).max():.0f}% / {np.median(e):+.0f}%"


def regime_table(comparisons: list[Comparison]) -> list[str]:
    lines = [
        "| quantity | regime | rows | ours: median / max \\|error\\|, median signed "
        "| τ·L only (no prompt attention) |",
        "|---|---|---|---|---|",
    ]
    for phase in BATCHES:
        for regime in ("within fit", "beyond fit"):
            for batch_label, keep in (("batch 1", lambda b: b == 1), ("batch > 1", lambda b: b > 1)):
                chosen = [
                    c
                    for c in comparisons
                    if c.row.phase == phase and c.regime == regime and keep(c.row.batch)
                ]
                if not chosen:
                    continue
                bare = _stats([c.no_attention_error_pct for c in chosen]) if phase == "prefill" else "—"
                lines.append(
                    f"| {phase}, {batch_label} | {regime} | {len(chosen)} | "
                    f"{_stats([c.error_pct for c in chosen])} | {bare} |"
                )
    return lines


def length_table(comparisons: list[Comparison]) -> list[str]:
    """Signed error by input length at batch 1, median over the profiles [min, max]."""
    lines = [
        "| input tokens | prefill, batch 1 | same, τ·L only | decode step, batch 1 | decode step, batch 32 |",
        "|---|---|---|---|---|",
    ]

    def cell(values: list[float]) -> str:
        if not values:
            return "—"
        return f"{np.median(values):+.0f}% [{min(values):+.0f}, {max(values):+.0f}]"

    for n in INPUTS:
        pick = [c for c in comparisons if c.row.input_tokens == n]
        lines.append(
            f"| {n:,} | "
            + " | ".join(
                cell(v)
                for v in (
                    [c.error_pct for c in pick if c.row.phase == "prefill" and c.row.batch == 1],
                    [c.no_attention_error_pct for c in pick if c.row.phase == "prefill" and c.row.batch == 1],
                    [c.error_pct for c in pick if c.row.phase == "decode" and c.row.batch == 1],
                    [c.error_pct for c in pick if c.row.phase == "decode" and c.row.batch == 32],
                )
            )
            + " |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refresh", action="store_true", help="regenerate the CSV with aiconfigurator")
    parser.add_argument("--markdown", action="store_true", help="print only the docs' tables")
    parser.add_argument("--csv", type=Path, default=DATA)
    args = parser.parse_args()
    if args.refresh:
        refresh(args.csv)
    comparisons = compare(read_rows(args.csv))
    if not args.markdown:
        print(
            "profile | phase | input | batch | reference ms (attention ms, silicon share) | ours ms | error",
            end="",
        )
        print(" | τ·L only")
        for c in comparisons:
            r = c.row
            print(
                f"{r.profile} | {r.phase} | {r.input_tokens} | {r.batch} | {r.reference_ms:.2f} "
                f"({r.attention_ms:.2f}, {r.silicon_share:.2f}) | {c.ours_ms:.2f} | {c.error_pct:+.1f}% | "
                f"{c.no_attention_error_pct:+.1f}%"
            )
        print()
    print("\n".join(regime_table(comparisons)))
    print()
    print("\n".join(length_table(comparisons)))


if __name__ == "__main__":
    main()
