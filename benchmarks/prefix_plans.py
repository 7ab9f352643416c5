"""The fleets prefix caching moves: the synthetic session trace planned off, auto (random and
affinity dispatch) and at given hit rates; the figures of docs/validation.md "Prefix caching".

    python benchmarks/prefix_plans.py

tests/data/logs/mooncake-sessions.jsonl (scripts/make_prefix_trace.py: synthetic, not measured),
at 100 req/s, long context 131,072, the default serving profile, SLOs 2 s and 10 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

LOG = REPO / "tests" / "data" / "logs" / "mooncake-sessions.jsonl"


def main() -> None:
    from fleetopt.api import plan_run_from_options

    print("| SLO | --prefix-caching | dispatch | hit rate (per pool) | GPUs | vs off |")
    print("|---|---|---|---|---|---|")
    for slo in ("2s", "10s"):
        off_gpus = None
        for setting, dispatch in (("off", "random"), ("auto", "random"), ("auto", "affinity"),
                                  ("hit-rate:0.3", "random"), ("hit-rate:0.6", "random")):  # fmt: skip
            run = plan_run_from_options(
                workload=str(LOG), slo=slo, mean_rate_per_s=100, b_short=None, gamma=None, tpot_slo=None,
                long_context_tokens=131072, reader_options={"log_format": "mooncake"},
                prefix_caching=setting, prefix_dispatch=dispatch,
            )  # fmt: skip
            gpus = run.plan.best.total_gpus
            off_gpus = off_gpus or gpus
            caching = run.document.get("prefix_caching")
            rates = (
                ", ".join(f"{name} {pool['hit_rate']:.1%}" for name, pool in caching["pools"].items())
                if caching
                else "—"
            )
            shown = dispatch if setting == "auto" else "—"
            print(f"| {slo} | {setting} | {shown} | {rates} | {gpus:,} | {gpus / off_gpus - 1:+.1%} |")


if __name__ == "__main__":
    main()
