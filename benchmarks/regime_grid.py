"""The regime grid of issue 30 item 4: where the analytic plan holds, by simulation (``plan --refine 1``).

Fixed before it was run: three GPUs from fast to slow (Llama-3.1-70B FP8 on B200 TP8 and H100 TP8,
vLLM-calibrated; Llama-3-70B on A100 TP4 from Vidur's operator times, the fixture
``tests/data/profiles/serving/llama-3-70b-a100-80gb-tp4-vidur.yaml``), three workloads at three
long contexts (azure-2023-code at 8K, azure-2023 at 16K, lmsys at 131K), SLOs of 0.3, 1 and 10 s,
100 req/s (the log's peak basis where it has timestamps), least-loaded dispatch (the plan's
default). For each scenario the plan's best fleet is refined (``--refine 1``): each pool's
smallest instance count whose simulated P99 TTFT meets the SLO with confidence
(docs/validation.md, "Refining a plan by simulation") — the simulated minimum at the plan's own
boundaries and slots. Printed: per scenario the analytic and refined counts and the pools the
unrefined plan warned about (``outside_validated_region``); per region (GPU ×
context) the pools whose analytic count is within ±15% of the simulated minimum and the fleets
within ±5% of it.

Warned: the pools the unrefined plan says the model may be wrong about, by kind: ``outside``
(``outside_validated_region``), ``slot wait`` (``slot_wait_sets_ttft``: "the pool may be an instance
short or long") and ``flat`` (``ttft_flat_in_instances``).

Run: python benchmarks/regime_grid.py [--rate 100] [--dispatch least-loaded] [--without TERM[,TERM]]
     [--max-num-seqs N]

``--without TERM[,TERM]`` plans and refines with engine-model corrections switched to their simplest
alternatives (``EngineAssumptions.without``; ``prompt_price,first_token_iteration``: the model before
prompt attention and the first token with the last chunk).
``--max-num-seqs N`` caps every profile's slots per instance at N (a copy of each serving profile with
``max_num_seqs: N``): the slot axis, 8 to 1,024.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARDWARE = (
    ("B200 TP8", "llama-3.1-70b-fp8-b200-tp8-vllm"),
    ("H100 TP8", "llama-3.1-70b-fp8-h100-80gb-tp8-vllm"),
    ("A100 TP4 (Vidur)", "llama-3-70b-a100-80gb-tp4-vidur"),
)
CONTEXTS = (("8K", "azure-2023-code", 8192), ("16K", "azure-2023", 16384), ("131K", "lmsys", 131072))
SLOS_S = (0.3, 1.0, 10.0)
#: The plan's warnings that say the model may be wrong about a pool (and to simulate it).
WARNED = {
    "outside_validated_region": "outside",
    "slot_wait_sets_ttft": "slot wait",
    "ttft_flat_in_instances": "flat",
}


def _capped_servings(profiles_dir: Path, max_num_seqs: int, folder: Path) -> dict[str, str]:
    """A copy of each serving profile of :data:`HARDWARE` with ``max_num_seqs`` set, in ``folder``."""
    import yaml

    from fleetopt.io.profiles import load_serving

    out = {}
    for _, serving in HARDWARE:
        source = Path(load_serving(serving, [profiles_dir, ROOT / "profiles"]).source_file)
        data = yaml.safe_load(source.read_text())
        data["max_num_seqs"] = max_num_seqs
        target = folder / f"{serving}-seqs{max_num_seqs}.yaml"
        target.write_text(yaml.safe_dump(data, sort_keys=False))
        out[serving] = str(target)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--dispatch", default="least-loaded")
    parser.add_argument("--without", default=None, help="EngineAssumptions fields switched off (a,b)")
    parser.add_argument("--max-num-seqs", type=int, default=None)
    args = parser.parse_args()
    from fleetopt.api import plan_workload
    from fleetopt.core.engine.assumptions import DEFAULT_ASSUMPTIONS
    from fleetopt.core.engine.model import EngineModel
    from fleetopt.core.engines import load_kernels
    from fleetopt.errors import FleetoptError

    load_kernels()
    assumptions = DEFAULT_ASSUMPTIONS
    for term in args.without.split(",") if args.without else ():
        assumptions = assumptions.without(term)
    model = EngineModel(assumptions)
    profiles_dir = ROOT / "tests" / "data" / "profiles"
    servings = {serving: serving for _, serving in HARDWARE}
    if args.max_num_seqs is not None:
        servings = _capped_servings(profiles_dir, args.max_num_seqs, Path(tempfile.mkdtemp()))
    regions: dict[tuple[str, str], list] = defaultdict(list)
    print(
        "| GPU | context | SLO | pools: analytic → refined n (outcome) | GPUs analytic → refined | warned "
        "| CPU |"
    )
    print("|---|---|---|---|---|---|---|")
    for gpu, serving in HARDWARE:
        for label, workload, context in CONTEXTS:
            for slo in SLOS_S:
                start = time.process_time()
                kwargs = dict(
                    ttft_slo_s=slo, mean_rate_per_s=args.rate, serving=servings[serving],
                    long_context_tokens=context, profiles_dir=profiles_dir, dispatch=args.dispatch,
                    service_model=model,
                )  # fmt: skip
                try:
                    analytic = plan_workload(workload, **kwargs)
                except FleetoptError as exc:
                    print(f"| {gpu} | {label} | {slo:g} s | error: {exc} | – | – | – |", flush=True)
                    continue
                if analytic.plan.best is None:
                    print(f"| {gpu} | {label} | {slo:g} s | infeasible (analytic) | – | – | – |", flush=True)
                    continue
                warned = (
                    ", ".join(
                        f"{w['pool']} ({WARNED[w['kind']]})"
                        for w in analytic.document["warnings"]
                        if w["kind"] in WARNED
                    )
                    or "–"
                )
                try:
                    refined = plan_workload(workload, refine=1, **kwargs)
                except FleetoptError as exc:
                    cpu = time.process_time() - start
                    print(f"| {gpu} | {label} | {slo:g} s | {exc} | – | {warned} | {cpu:.0f} s |", flush=True)
                    regions[(gpu, label)].append(None)
                    continue
                cpu = time.process_time() - start
                fleet = refined.document["refinement"]["fleets"][0]
                pools = [p for p in fleet["pools"] if p["outcome"] != "no_traffic"]
                cells = ", ".join(
                    f"{p['pool']} {p['analytic_instances']} → {p['refined_instances']}"
                    + ("" if p["outcome"] == "refined" else f" ({p['outcome']})")
                    for p in pools
                )
                gpus = f"{fleet['analytic_gpus']:,} → {fleet['refined_gpus']:,}" if fleet["passed"] else "✗"
                print(
                    f"| {gpu} | {label} | {slo:g} s | {cells} | {gpus} | {warned} | {cpu:.0f} s |", flush=True
                )
                regions[(gpu, label)].append((pools, fleet))
    print(
        "\n| GPU | context | scenarios refined | pools within ±15% | fleets within ±5% "
        "| fleets over / under |"
    )
    print("|---|---|---|---|---|---|")
    for (gpu, label), rows in regions.items():
        done = [r for r in rows if r is not None]
        pools = [p for ps, _ in done for p in ps if p["outcome"] == "refined"]
        near = sum(
            abs(p["analytic_instances"] - p["refined_instances"]) <= 0.15 * p["refined_instances"]
            for p in pools
        )
        fleets = [f for _, f in done if f["passed"] and f["refined_gpus"]]
        within = sum(abs(f["analytic_gpus"] - f["refined_gpus"]) <= 0.05 * f["refined_gpus"] for f in fleets)
        over = sum(f["analytic_gpus"] > 1.05 * f["refined_gpus"] for f in fleets)
        under = sum(f["analytic_gpus"] < 0.95 * f["refined_gpus"] for f in fleets)
        print(
            f"| {gpu} | {label} | {len(done)} of {len(rows)} | {near} of {len(pools)} | "
            f"{within} of {len(fleets)} | {over} / {under} |"
        )


if __name__ == "__main__":
    main()
