"""Differential check of the planner: record every answer of a fixed set of plans, then compare.

    python scripts/differential_plans.py record before.json   # with the code before a change
    python scripts/differential_plans.py record after.json    # with the code after it
    python scripts/differential_plans.py compare before.json after.json

The set is 5 bundled workloads × 6 serving profiles × λ ∈ {3, 100, 5,000, 2·10⁶} req/s ×
SLO ∈ {0.15, 0.5, 2} s × {lockstep, lockstep with a 50 ms TPOT SLO, fleet-sim with p_c = 0.75}
= 1,080 plans. For each plan it keeps every grid cell, every baseline and the best fleet: the
routing (B, γ), feasibility and, per pool, instances, slots, what binds, P99 TTFT and
utilization. ``compare`` requires integers and labels to be identical and floats to agree to
1e-9 (relative), and prints every difference. A refactor that claims "identical answers" must
show zero differences here.
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Any

WORKLOADS = ("azure-2023", "azure", "lmsys", "agent-heavy", "azure-2023-code")
SERVINGS = (
    "llama-3-70b-a100-80gb-tp8",
    "llama-3-70b-h100-80gb-tp8",
    "llama-3.1-8b-a100-80gb-tp1",
    "llama-3.1-8b-h100-80gb-tp1",
    "deepseek-v3-h200-tp8",
    "qwen3-235b-a22b-mi300x-tp8",
)
RATES_PER_S = (3.0, 100.0, 5000.0, 2e6)
SLOS_S = (0.15, 0.5, 2.0)
MODEL_SETTINGS = (
    ("lockstep", None, 1.0),
    ("lockstep-tpot50", 0.05, 1.0),
    ("fleet-sim", None, 0.75),
)
FLOAT_TOLERANCE = 1e-9


def _pool(pool: Any) -> dict[str, Any]:
    return {
        "instances": pool.instances,
        "slots": pool.slots_per_instance,
        "binding": pool.binding_constraint,
        "slots_binding": pool.slots_binding,
        "feasible": pool.feasible,
        "p99_ttft_s": pool.p99_ttft_s,
        "utilization": pool.utilization,
        "rate": pool.arrival_rate_per_s,
    }


def _candidate(candidate: Any) -> dict[str, Any] | None:
    if candidate is None:
        return None
    routing = getattr(candidate, "routing", None)
    boundaries = list(routing.boundaries_tokens) if routing is not None else [candidate.b_short_tokens]
    if boundaries == [None]:
        boundaries = []
    return {
        "boundaries": boundaries,
        "gamma": candidate.gamma,
        "feasible": candidate.feasible,
        "pools": [_pool(p) for p in candidate.pools],
    }


def record(path: str) -> None:
    from fleetopt.api import profile_search_path
    from fleetopt.core.planner import Planner, PlanOptions
    from fleetopt.io.profiles import pool_hardware
    from fleetopt.io.workloads import load_workload

    dirs = profile_search_path(None)
    results: dict[str, Any] = {}
    start = time.perf_counter()
    for workload_name in WORKLOADS:
        workload = load_workload(workload_name)
        for serving in SERVINGS:
            hardware = pool_hardware(serving, dirs)
            prepared = None
            for setting, tpot, compressibility in MODEL_SETTINGS:
                model = "fleet-sim" if setting == "fleet-sim" else "lockstep"
                for rate in RATES_PER_S:
                    for slo in SLOS_S:
                        options = PlanOptions(
                            sizing_rate_per_s=rate,
                            ttft_slo_s=slo,
                            service_model=model,
                            tpot_slo_s=tpot,
                            compressibility=compressibility,
                        )
                        planner = Planner(workload, (hardware,), options, statistics=prepared)
                        prepared = planner.prepared_statistics()
                        plan = planner.plan()
                        key = f"{workload_name}|{serving}|{setting}|{rate:g}|{slo:g}"
                        results[key] = {
                            "best": _candidate(plan.best),
                            "homogeneous": _candidate(plan.homogeneous),
                            "pool_routing": _candidate(plan.pool_routing),
                            "retrofit": _candidate(plan.retrofit),
                            "grid": [_candidate(c) for c in plan.grid],
                        }
    elapsed = time.perf_counter() - start
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(results, handle, allow_nan=True)
    print(f"recorded {len(results)} plans in {elapsed:.1f} s to {path}")


def _differences(a: Any, b: Any, where: str) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} != {len(b)}"]
        return [
            d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{where}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return []
        if a == b or abs(a - b) <= FLOAT_TOLERANCE * max(abs(a), abs(b)):
            return []
        return [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, bool) or isinstance(b, bool) or type(a) is not type(b):
        return [] if a == b and type(a) is type(b) else [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def compare(before_path: str, after_path: str) -> int:
    with open(before_path, encoding="utf-8") as handle:
        before = json.load(handle)
    with open(after_path, encoding="utf-8") as handle:
        after = json.load(handle)
    differences = _differences(before, after, "plans")
    cells = sum(len(p["grid"]) + 4 for p in before.values())
    for line in differences[:50]:
        print(line)
    print(f"{len(before)} plans, {cells} fleets compared: {len(differences)} difference(s)")
    return 1 if differences else 0


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "record":
        record(argv[2])
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
