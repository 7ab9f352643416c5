"""``fleetopt drift``: does a written plan still fit today's workload? (exit 0 fits, 1 drift, 2 bad input)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import typer

from fleetopt.cli.common import (
    INPUT_COLUMN_OPTION,
    INPUT_FORMAT_OPTION,
    OUTPUT_COLUMN_OPTION,
    SPLIT_OPTION,
    TIME_COLUMN_OPTION,
)


class DriftFormat(str, enum.Enum):
    """``--format`` of ``fleetopt drift``: the common three plus a pull-request comment."""

    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


#: Exit statuses (docs/ci.md).
EXIT_FITS, EXIT_DRIFT, EXIT_BAD_INPUT = 0, 1, 2


def register(app: typer.Typer) -> None:
    """Add ``drift`` to ``app``."""
    app.command("drift")(drift)


def drift(
    plan: Path = typer.Option(
        ..., "--plan", help="A plan written by fleetopt plan --output (.yaml/.yml/.json)."
    ),
    cdf: str = typer.Option(
        ..., "--cdf", help="Today's workload: a bundled name or a request log / CDF file."
    ),
    rate: float | None = typer.Option(
        None,
        "--rate",
        help="Today's arrival rate, req/s. Default: the log's observed rate, else the planned rate.",
    ),
    max_cost_change: str = typer.Option(
        "10%",
        "--max-cost-change",
        help="Drift when re-planning today changes the cost by more than this (relative, e.g. 10%).",
    ),
    max_ks: str = typer.Option(
        "0.1",
        "--max-ks",
        help="Drift when the KS distance of total tokens surely exceeds this (0–1; resolution ±0.01).",
    ),
    min_headroom: str = typer.Option(
        "0%",
        "--min-headroom",
        help="Drift unless the planned fleet also fits at this much more traffic (e.g. 10%).",
    ),
    input_format: str | None = INPUT_FORMAT_OPTION,
    input_column: str | None = INPUT_COLUMN_OPTION,
    output_column: str | None = OUTPUT_COLUMN_OPTION,
    time_column: str | None = TIME_COLUMN_OPTION,
    split: str = SPLIT_OPTION,
    fmt: DriftFormat = typer.Option(
        DriftFormat.table,
        "--format",
        "-f",
        help="table for people; json or yaml for pipelines; markdown for a pull-request comment.",
    ),
) -> None:
    """Check a planned fleet against today's workload: fit, re-plan, distribution shift.

    Exit 0: the fleet fits within tolerance; 1: drift (every reason listed); 2: bad usage or
    an unreadable plan or workload.
    """
    import dataclasses

    from fleetopt.api import observed_rate_per_s
    from fleetopt.core.drift import Tolerances, check_drift
    from fleetopt.errors import FleetoptError, ValidationError
    from fleetopt.io.plans import read_plan, workload_fingerprint
    from fleetopt.io.units import parse_fraction
    from fleetopt.io.workloads import load_workload
    from fleetopt.render.drift import draw_drift, drift_document, drift_markdown
    from fleetopt.render.output import emit

    def refuse(exc: Exception) -> typer.Exit:
        typer.echo(f"Error: {exc}", err=True)
        return typer.Exit(EXIT_BAD_INPUT)

    try:
        tolerances = Tolerances(
            max_cost_change=parse_fraction(max_cost_change, field="--max-cost-change", allow_above_one=True),
            max_ks=parse_fraction(max_ks, field="--max-ks"),
            min_headroom=parse_fraction(min_headroom, field="--min-headroom", allow_above_one=True),
        )
        if rate is not None and not (0 < rate < float("inf")):
            raise ValidationError(f"--rate: {rate:g} req/s must be positive and finite")
        document = read_plan(plan)
        fleet, planned_options, planned_summary = _plan_inputs(document, plan)
        today = load_workload(
            cdf,
            input_format=input_format,
            input_column=input_column,
            output_column=output_column,
            time_column=time_column,
            split=split,
        )
        if rate is not None:
            today_rate, origin = float(rate), "given"
        elif (observed := observed_rate_per_s(today)) is not None:
            today_rate, origin = observed, "observed"
        else:
            today_rate, origin = planned_options.arrival_rate_per_s, "planned"
        current_summary = _summary(
            workload_fingerprint(today, fleet.b_short_tokens, fleet.gamma), "today's workload"
        )
        options = dataclasses.replace(planned_options, arrival_rate_per_s=today_rate)
        result = check_drift(today, fleet, options, planned_summary, current_summary, tolerances)
    except FleetoptError as exc:
        raise refuse(exc) from None

    data = drift_document(
        result,
        document=document,
        plan_path=str(plan),
        today_label=cdf,
        today_requests=today.request_count,
        rate_origin=origin,
        options=options,
        tolerances=tolerances,
        planned=planned_summary,
        current=current_summary,
    )
    if fmt is DriftFormat.markdown:
        typer.echo(drift_markdown(data), nl=False)
    else:
        emit(data, fmt.value, draw_drift)
    if result.drifted:
        raise typer.Exit(EXIT_DRIFT)


# ---------------------------------------------------------------------------------------------
# The plan document → core objects (read_plan has checked kind, version and the pool counts)
# ---------------------------------------------------------------------------------------------


def _plan_inputs(document: dict[str, Any], path: Path):
    """(PlannedFleet, PlanOptions at the planned rate, planned WorkloadSummary) of a plan document."""
    from fleetopt.core.drift import PlannedFleet, PlannedPool
    from fleetopt.core.planner import PlanOptions
    from fleetopt.errors import ValidationError
    from fleetopt.io.plans import hardware_from_document

    source = f"plan {path}"
    get = _FieldReader(source)
    inputs, best = document["inputs"], document["best"]
    profiles = get.mapping(inputs, "inputs.profiles")
    hardware = {
        role: hardware_from_document(
            get.mapping(profiles, f"inputs.profiles.{role}"), source=source, field=f"inputs.profiles.{role}"
        )
        for role in ("short", "long")
    }
    pools_doc = best["pools"]
    names = set(pools_doc)
    if names not in ({"short", "long"}, {"homogeneous"}):
        raise ValidationError(
            f"{source}: best.pools has {', '.join(sorted(names))}; expected short and long, or homogeneous"
        )
    pools = []
    for name in ("short", "long", "homogeneous"):
        if name not in pools_doc:
            continue
        pool = pools_doc[name]
        pool_hardware = hardware["short" if name == "short" else "long"]
        if pool["serving_profile"] != pool_hardware.serving_name:
            raise ValidationError(
                f"{source}: best.pools.{name}.serving_profile = {pool['serving_profile']!r} does not match "
                f"inputs.profiles.{'short' if name == 'short' else 'long'}.serving_name "
                f"{pool_hardware.serving_name!r}"
            )
        if pool["gpus_per_instance"] != pool_hardware.gpus_per_instance:
            raise ValidationError(
                f"{source}: best.pools.{name}.gpus_per_instance = {pool['gpus_per_instance']!r} does not "
                f"match the profile's {pool_hardware.gpus_per_instance}"
            )
        if pool["context_tokens"] < 1 or (pool["instances"] > 0 and pool["slots_per_instance"] < 1):
            raise ValidationError(
                f"{source}: best.pools.{name}: context_tokens and slots_per_instance must be ≥ 1"
            )
        pools.append(
            PlannedPool(
                name=name,
                hardware=pool_hardware,
                instances=pool["instances"],
                slots_per_instance=pool["slots_per_instance"],
                context_tokens=pool["context_tokens"],
                planned_arrival_rate_per_s=get.number(pool, f"best.pools.{name}.arrival_rate_per_s", True),
                planned_utilization=get.number(pool, f"best.pools.{name}.utilization", True),
                planned_p99_ttft_s=get.number(pool, f"best.pools.{name}.p99_ttft_s", True),
            )
        )
    homogeneous = "homogeneous" in names
    fleet = PlannedFleet(
        b_short_tokens=None if homogeneous else best["b_short_tokens"],
        gamma=1.0 if homogeneous else float(best["gamma"]),
        pools=tuple(pools),
        total_gpus=get.integer(best, "best.total_gpus"),
        cost_per_hour_usd=get.number(best, "best.cost_per_hour_usd", positive=True),
    )
    if fleet.total_gpus != sum(p.instances * p.hardware.gpus_per_instance for p in pools):
        raise ValidationError(
            f"{source}: best.total_gpus = {fleet.total_gpus} does not match the pools' instances × GPUs"
        )
    tpot = inputs.get("tpot_slo_s")
    options = PlanOptions(
        arrival_rate_per_s=float(inputs["arrival_rate_per_s"]),
        ttft_slo_s=float(inputs["ttft_slo_s"]),
        long_context_tokens=get.integer(inputs, "inputs.long_context_tokens"),
        b_short_candidates=tuple(get.integers(inputs, "inputs.b_short_candidates")),
        gammas=tuple(get.numbers(inputs, "inputs.gammas")),
        compressibility=float(inputs["compressibility"]),
        service_model=inputs["service_model"],
        max_utilization=float(inputs["max_utilization"]),
        quantile=get.number(inputs, "inputs.quantile"),
        tpot_slo_s=None if tpot is None else get.number(inputs, "inputs.tpot_slo_s", positive=True),
    )
    try:
        options.validate()
    except ValidationError as exc:
        raise ValidationError(f"{source}: inputs: {exc}") from None
    fingerprint = get.mapping(inputs, "inputs.workload_fingerprint")
    return fleet, options, _summary(fingerprint, source, "inputs.workload_fingerprint")


def _summary(fingerprint: dict[str, Any], source: str, prefix: str = "workload_fingerprint"):
    """A WorkloadSummary from a fingerprint (io.plans.workload_fingerprint's dictionary)."""
    from fleetopt.core.drift import WorkloadSummary

    get = _FieldReader(source)
    arrivals = fingerprint.get("arrivals")
    arrivals = arrivals if isinstance(arrivals, dict) else {}
    tokens = {}
    for column in ("input", "output"):
        key = f"{column}_tokens_p50_p90_p99"
        if fingerprint.get(key) is not None:
            tokens[column] = tuple(get.integers(fingerprint, f"{prefix}.{key}"))
    levels = tuple(get.numbers(fingerprint, f"{prefix}.total_tokens_quantile_levels"))
    quantiles = tuple(get.integers(fingerprint, f"{prefix}.total_tokens_quantiles"))
    if len(levels) != len(quantiles) or not levels:
        get.fail(
            f"{prefix}.total_tokens_quantiles",
            f"{len(quantiles)} values",
            f"one per level ({len(levels)} levels)",
        )
    by_level = {round(level, 6): value for level, value in zip(levels, quantiles, strict=True)}
    if all(p in by_level for p in (0.5, 0.9, 0.99)):
        tokens["total"] = tuple(by_level[p] for p in (0.5, 0.9, 0.99))
    digest = fingerprint.get("sha256")
    return WorkloadSummary(
        quantile_levels=levels,
        total_tokens_quantiles=quantiles,
        token_quantiles=tokens,
        mean_total_tokens=get.number(fingerprint, f"{prefix}.mean_total_tokens", True),
        alpha=get.number(fingerprint, f"{prefix}.alpha_at_b_short", True),
        beta=get.number(fingerprint, f"{prefix}.beta_at_gamma", True),
        arrival_rate_per_s=get.number(arrivals, f"{prefix}.arrivals.mean_rate_per_s", True),
        interarrival_scv=get.number(arrivals, f"{prefix}.arrivals.interarrival_scv", True),
        digest=digest if isinstance(digest, str) else None,
    )


class _FieldReader:
    """Typed access to plan fields; every failure names the file, the field, the value, what is allowed."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, field: str, value: Any, allowed: str):
        from fleetopt.errors import ValidationError

        raise ValidationError(f"{self.source}: {field} = {value!r} is invalid; expected {allowed}")

    @staticmethod
    def _leaf(field: str) -> str:
        return field.rsplit(".", 1)[-1]

    def mapping(self, parent: dict[str, Any], field: str) -> dict[str, Any]:
        value = parent.get(self._leaf(field))
        if not isinstance(value, dict):
            self.fail(field, value, "a mapping")
        return value

    def number(
        self, parent: dict[str, Any], field: str, optional: bool = False, positive: bool = False
    ) -> float | None:
        import math

        value = parent.get(self._leaf(field))
        if value is None and optional:
            return None
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or (positive and value <= 0)
        ):
            self.fail(field, value, "a positive number" if positive else "a finite number")
        return float(value)

    def integer(self, parent: dict[str, Any], field: str) -> int:
        value = parent.get(self._leaf(field))
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.fail(field, value, "an integer ≥ 0")
        return value

    def numbers(self, parent: dict[str, Any], field: str) -> list[float]:
        import math

        value = parent.get(self._leaf(field))
        ok = isinstance(value, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
        )
        if not ok or not value:
            self.fail(field, value, "a non-empty list of numbers")
        return [float(v) for v in value]

    def integers(self, parent: dict[str, Any], field: str) -> list[int]:
        value = parent.get(self._leaf(field))
        ok = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        if not ok or not value:
            self.fail(field, value, "a non-empty list of integers")
        return value
