"""Plan files: the workload fingerprint, the atomic writer and the one reader.

The document's fields and schema are :mod:`fleetopt.io.documents.plan` (``fleetopt schema plan``
prints it); :mod:`fleetopt.io.documents.build_plan` builds it from a plan. It is printed by
``fleetopt plan --format json|yaml``, written by ``--output FILE`` with
:func:`write_document_atomically`, and read back by ``fleetopt drift``, ``simulate`` and
``export`` through :func:`read_plan`, which checks it against the schema and then what the schema
cannot say (the pools match the routing and the profiles, GPUs add up, the options are in the
model's domain).
"""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from fleetopt.core.planner import PlanOptions
from fleetopt.core.routing import Routing, pool_names
from fleetopt.core.service import PoolHardware
from fleetopt.core.workload import Workload, weighted_sum
from fleetopt.errors import ValidationError, excerpt
from fleetopt.io.documents.plan import (
    PLAN_KIND,
    READABLE_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    FleetDocument,
    PlanDocument,
    PlanInputs,
    PoolDocument,
    ScheduleDocument,
    WorkloadFingerprint,
    WorkloadReader,
    read_plan_document,
)
from fleetopt.io.documents.typed import from_document
from fleetopt.io.files import read_text, write_document_atomically, write_files_atomically  # noqa: F401
from fleetopt.io.yamlio import json_loads, safe_load

if TYPE_CHECKING:  # the drift types are built only when a plan is read back (drift, simulate)
    from fleetopt.core.drift import PlannedFleet, WorkloadSummary
    from fleetopt.core.pools import DeployablePool

__all__ = ["PLAN_KIND", "READABLE_SCHEMA_VERSIONS", "SCHEMA_VERSION", "PlanFile", "read_plan"]

#: Quantile levels of the total-token distribution kept in a plan's workload fingerprint
#: (0.000, 0.001, …, 1.000: a KS distance against it is pinned to within 0.001).
FINGERPRINT_LEVELS = tuple(round(k / 1000, 3) for k in range(1001))


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, levels) -> list[int]:
    """Inverted-CDF quantiles (smallest v with F(v) ≥ level) of a weighted sample of token counts."""
    if values.size < 2 or bool((values[1:] >= values[:-1]).all()):  # totals (and split CDFs) are sorted
        sorted_values, cumulative = values, np.cumsum(weights)
    elif values.size > 4096 and 0 <= values.min() and values.max() <= 4 * values.size:
        # a big log's token counts: one pass of counting by value instead of a sort
        by_value = np.bincount(values.astype(np.int64), weights=weights)
        sorted_values, cumulative = np.flatnonzero(by_value > 0), np.cumsum(by_value[by_value > 0])
    else:
        order = np.argsort(values, kind="stable")
        sorted_values, cumulative = values[order], np.cumsum(weights[order])
    cumulative /= cumulative[-1]
    positions = np.searchsorted(cumulative, np.asarray(levels) * (1 - 1e-12), side="left")
    return [int(sorted_values[min(p, sorted_values.size - 1)]) for p in positions]


def workload_fingerprint(
    workload: Workload, b_short_tokens: int | None, gamma: float | None
) -> WorkloadFingerprint:
    """A compact, comparable summary of a workload: sizes, quantiles, α, β, arrivals and a hash."""
    digest = hashlib.sha256()
    for array in (workload.total_tokens, workload.input_tokens, workload.output_tokens, workload.weights):
        digest.update(np.ascontiguousarray(array).tobytes())
    weights = workload.weights / workload.total_weight
    alpha = beta = arrivals = None
    if b_short_tokens is not None:
        alpha = workload.cdf_at(b_short_tokens)
        if gamma is not None:
            beta = workload.cdf_at(gamma * b_short_tokens) - alpha
    if (workload.request_count or 0) >= 2 and workload.has_arrivals:
        from fleetopt.core.workload_stats import workload_arrival_statistics

        arrivals = workload_arrival_statistics(workload)
    return WorkloadFingerprint(
        sha256=digest.hexdigest(),
        kind=workload.kind,
        requests=workload.request_count,
        atoms=int(workload.total_tokens.size),
        mean_input_tokens=weighted_sum(workload.input_tokens, weights),
        mean_output_tokens=weighted_sum(workload.output_tokens, weights),
        mean_total_tokens=weighted_sum(workload.total_tokens, weights),
        input_tokens_p50_p90_p99=tuple(_weighted_quantiles(workload.input_tokens, weights, (0.5, 0.9, 0.99))),
        output_tokens_p50_p90_p99=tuple(
            _weighted_quantiles(workload.output_tokens, weights, (0.5, 0.9, 0.99))
        ),
        total_tokens_quantile_levels=list(FINGERPRINT_LEVELS),
        total_tokens_quantiles=_weighted_quantiles(workload.total_tokens, weights, FINGERPRINT_LEVELS),
        alpha_at_b_short=alpha,
        beta_at_gamma=beta,
        arrivals=arrivals,
    )


def refuse_overwriting_input(output: Path, inputs: list[str], message: str | None = None) -> None:
    """Raise ValidationError when ``output`` is one of the ``inputs`` files (a plan must never
    replace the log or CDF it was computed from, an export never the plan). ``message`` words the
    refusal; ``{input}`` in it names the input file."""
    target = Path(output).expanduser().resolve()
    for item in inputs:
        source = Path(item).expanduser()
        if source.is_file() and source.resolve() == target:
            default = f"--output {output}: that is the input file {{input}}; write the plan elsewhere"
            raise ValidationError((message or default).format(input=item))


def plan_format_for(path: Path) -> str:
    """``json`` or ``yaml`` from a plan file's suffix."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise ValidationError(
        f"--output {path}: the suffix must be .json, .yaml or .yml (got {suffix or 'none'!r})"
    )


@dataclass(frozen=True)
class ScheduleWindow:
    """One window of a plan's time-of-day schedule: offsets from the schedule's origin (seconds),
    the rate it was sized for and the instances each pool needs in it."""

    start_s: float
    end_s: float
    sizing_rate_per_s: float
    instances: dict[str, int]


@dataclass(frozen=True)
class PlanSchedule:
    """A plan's time-of-day schedule (``fleetopt plan --schedule``; shape in docs/planner.md).

    Attributes:
        window_s: window length, seconds.
        period_s: 86,400 (daily) or 604,800 (weekly), else the log's span.
        periodic: False when ``period_s`` is only the log's span (not a day or a week).
        origin_utc: wall-clock time of offset 0 (UTC), or None when the log's times are relative.
        pools: pool names in the fleet's order.
        windows: the windows, in order of their offsets.
        rate_basis: mean, peak or pNN, as the plan.
        gpu_hours_per_period, static_gpu_hours_per_period: GPU-hours of the scheduled and the
            static fleet over one period.
    """

    window_s: float
    period_s: float
    periodic: bool
    origin_utc: datetime.datetime | None
    pools: tuple[str, ...]
    windows: tuple[ScheduleWindow, ...]
    rate_basis: str | None
    gpu_hours_per_period: float | None
    static_gpu_hours_per_period: float | None


@dataclass(frozen=True)
class PlanFile:
    """A plan file as every command reads it (:func:`read_plan`), checked field by field.

    Attributes:
        source: ``plan <path>``, the prefix of every error about this file.
        document: the document as written (renderers echo parts of it).
        fleet: the best fleet as deployed: routing, pools (shortest first), GPUs, cost.
        options: the planner options the plan was computed with.
        summary: the planned workload's fingerprint, as a comparable summary.
        workload: the workload as given to ``fleetopt plan`` (a bundled name or a path).
        workload_reader: how that workload was read (reader options for ``load_workload``).
        schedule: the time-of-day schedule, when the plan has one.
        plan_document: the document, typed (version 1 upgraded; fields of later releases defaulted).
    """

    source: str
    document: dict[str, Any]
    fleet: PlannedFleet
    options: PlanOptions
    summary: WorkloadSummary
    workload: str | None
    workload_reader: dict[str, Any]
    schedule: PlanSchedule | None = None
    plan_document: PlanDocument | None = None


def read_plan(path: Path) -> PlanFile:
    """Read and check a plan file written by ``fleetopt plan --output`` — the one plan reader.

    ``drift``, ``simulate`` and ``export`` read plans here, so they accept and reject the same
    files. Raises ValidationError naming the file, the field, the value and what is allowed:
    unreadable, truncated, not a plan, an unsupported ``schema_version``, a missing, unknown or
    ill-typed field (:mod:`fleetopt.io.documents.plan`), pools that do not match the routing or the
    profiles, options outside the model's domain.
    """
    path = Path(path)
    return plan_file_from_document(_load_document(path), f"plan {path}")


def plan_file_from_document(document: Any, source: str) -> PlanFile:
    """Check a plan document (as :func:`read_plan` reads it, or as ``fleetopt plan`` just built it)."""
    typed = read_plan_document(document, source)
    check = _Checker(source)
    inputs = typed.inputs
    options = _plan_options(check, inputs)
    if typed.best is None:
        raise ValidationError(
            f"{source}: best is null: the plan found no feasible fleet, so there is none to use"
        )
    fleet = _planned_fleet(check, inputs, typed.best, options)
    return PlanFile(
        source=source,
        document=document,
        fleet=fleet,
        options=options,
        summary=workload_summary(inputs.workload_fingerprint, source, "inputs.workload_fingerprint"),
        workload=inputs.workload or None,
        workload_reader=_reader_options(inputs.workload_reader),
        schedule=None if typed.schedule is None else _schedule(check, typed.schedule, fleet),
        plan_document=typed,
    )


class _Checker:
    """What the schema cannot say about a plan, checked: every failure names the file, the field,
    the value and what is allowed."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, field: str, value: Any, allowed: str) -> NoReturn:
        if value is None:
            raise ValidationError(
                f"{self.source}: {field} is missing (the file may be truncated); expected {allowed}"
            )
        raise ValidationError(f"{self.source}: {field} = {excerpt(value)} is invalid; expected {allowed}")


def _schedule(check: _Checker, schedule: ScheduleDocument, fleet: PlannedFleet) -> PlanSchedule:
    """The plan's ``schedule`` section, checked: windows inside the period, pools of the fleet,
    whole instances that never exceed the static plan's."""
    origin_utc = None
    if schedule.origin_utc is not None:
        try:
            origin_utc = datetime.datetime.fromisoformat(schedule.origin_utc.replace("Z", "+00:00"))
        except ValueError:
            check.fail(
                "schedule.origin_utc", schedule.origin_utc,
                'an ISO 8601 time such as "2023-11-16T00:00:00Z", or null',
            )  # fmt: skip
        if origin_utc.tzinfo is None:
            origin_utc = origin_utc.replace(tzinfo=datetime.timezone.utc)
        origin_utc = origin_utc.astimezone(datetime.timezone.utc)
    names = tuple(pool.name for pool in fleet.pools)
    if tuple(schedule.pools) != names:
        check.fail("schedule.pools", schedule.pools, f"the fleet's pools {list(names)}")
    static = {pool.name: pool.instances for pool in fleet.pools}
    period_s = schedule.period_s
    windows = []
    for k, window in enumerate(schedule.windows):
        where = f"schedule.windows[{k}]"
        start, end = window.start_s, window.end_s
        if not 0 <= start < end <= period_s:
            check.fail(f"{where}.end_s", end, f"0 ≤ start_s ({start:g}) < end_s ≤ period_s ({period_s:g})")
        instances = {}
        for name in names:
            count = window.instances.get(name)
            if count is None:
                check.fail(f"{where}.instances.{name}", None, "an integer ≥ 0")
            if count > static[name]:
                check.fail(
                    f"{where}.instances.{name}", count, f"at most the static plan's {static[name]} instances"
                )
            instances[name] = count
        extra = sorted(set(window.instances) - set(names))
        if extra:
            check.fail(f"{where}.instances", extra, f"the fleet's pools {list(names)}")
        windows.append(ScheduleWindow(start, end, window.arrival_rate_per_s, instances))
    windows.sort(key=lambda w: w.start_s)
    for before, after in zip(windows, windows[1:], strict=False):
        if after.start_s < before.end_s:
            check.fail("schedule.windows", f"{before.start_s:g}–{before.end_s:g} and {after.start_s:g}–"
                       f"{after.end_s:g}", "windows that do not overlap")  # fmt: skip
    return PlanSchedule(
        window_s=schedule.window_s,
        period_s=period_s,
        periodic=schedule.periodic,
        origin_utc=origin_utc,
        pools=names,
        windows=tuple(windows),
        rate_basis=schedule.rate_basis,
        gpu_hours_per_period=schedule.gpu_hours_per_period,
        static_gpu_hours_per_period=schedule.static_gpu_hours_per_period,
    )


def _load_document(path: Path) -> Any:
    text = read_text(path, "plan ")
    try:
        if path.suffix.lower() == ".json":
            return json_loads(text)

        return safe_load(text)
    except Exception as exc:  # json.JSONDecodeError, yaml.YAMLError: a truncated or mangled file
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValidationError(
            f"plan {path}: not valid {path.suffix.lstrip('.') or 'YAML'} ({first_line})"
        ) from None


def _reader_options(recorded: WorkloadReader) -> dict[str, Any]:
    """``load_workload`` options that read the plan's workload the way the plan read it."""
    keys = ("input_format", "log_format", "input_column", "output_column", "time_column", "time_unit")
    reader = {key: getattr(recorded, key) for key in keys if getattr(recorded, key) is not None}
    if recorded.split_model is not None:
        reader["split"] = recorded.split_model
    return reader


def _plan_options(check: _Checker, inputs: PlanInputs) -> PlanOptions:
    """The planner options of a plan's inputs (the mean basis for plans before the rate basis)."""
    basis: dict[str, Any] = {}
    if inputs.rate_basis is not None:
        rate_basis = inputs.rate_basis
        basis = {
            "rate_basis": rate_basis.basis,
            "mean_rate_per_s": inputs.arrival_rate_per_s,
            "rate_window_s": rate_basis.window_s,
            "arrival_dispersion": tuple(rate_basis.arrival_dispersion),
        }
    sizing = inputs.sizing_rate_per_s
    options = PlanOptions(
        sizing_rate_per_s=inputs.arrival_rate_per_s if sizing is None else sizing,
        ttft_slo_s=inputs.ttft_slo_s,
        long_context_tokens=inputs.long_context_tokens,
        b_short_candidates=tuple(inputs.b_short_candidates),
        gammas=tuple(inputs.gammas),
        compressibility=inputs.compressibility,
        max_cut_fraction=inputs.max_cut_fraction,
        service_model=inputs.service_model,
        max_utilization=inputs.max_utilization,
        quantile=inputs.quantile,
        tpot_slo_s=inputs.tpot_slo_s,
        max_pools=inputs.max_pools,
        spare_instances=inputs.spare_instances,
        ttft_headroom_fraction=inputs.ttft_headroom_fraction,
        **basis,
    )
    try:
        options.validate()
    except ValidationError as exc:
        raise ValidationError(f"{check.source}: inputs: {exc}") from None
    return options


def _planned_fleet(
    check: _Checker, inputs: PlanInputs, best: FleetDocument, options: PlanOptions
) -> PlannedFleet:
    """The best fleet: its pools by name (shortest first), their hardware and the routing."""
    source = check.source
    by_role = {"short": inputs.profiles.short, "long": inputs.profiles.long}
    by_pool = inputs.profiles.pools or {}  # per pool when the search chose it (plan --hardware)
    pools_doc = best.pools
    names = pool_names(len(pools_doc)) if pools_doc else ()
    if not pools_doc or set(pools_doc) != set(names):
        check.fail("best.pools", sorted(pools_doc), "homogeneous; short and long; or pool-1 … pool-K (K ≥ 3)")
    if best.pool_count != len(names):
        check.fail("best.pool_count", best.pool_count, f"{len(names)}, the number of best.pools")
    routing = _routing(check, best, options, len(names))
    pools = []
    if by_pool and set(by_pool) != set(names):
        allowed = f"one profile for each of best.pools {list(names)}"
        check.fail("inputs.profiles.pools", sorted(by_pool), allowed)
    for index, name in enumerate(names):
        role = "long" if index == len(names) - 1 else "short"
        where = f"pools.{name}" if by_pool else role
        hardware = by_pool.get(name) or by_role[role]
        pools.append(_planned_pool(check, pools_doc[name], name, where, hardware))
    for pool, boundary in zip(pools, routing.boundaries_tokens, strict=False):
        if pool.context_tokens < boundary:
            check.fail(
                f"best.pools.{pool.name}.context_tokens", pool.context_tokens, f"≥ its boundary {boundary}"
            )
    from fleetopt.core.drift import PlannedFleet

    if best.cost_per_hour_usd is None or not best.cost_per_hour_usd > 0:
        check.fail("best.cost_per_hour_usd", best.cost_per_hour_usd, "a positive finite number")
    fleet = PlannedFleet(
        routing=routing,
        pools=tuple(pools),
        total_gpus=best.total_gpus,
        cost_per_hour_usd=best.cost_per_hour_usd,
    )
    if fleet.total_gpus != sum(p.instances * p.hardware.gpus_per_instance for p in pools):
        raise ValidationError(
            f"{source}: best.total_gpus = {fleet.total_gpus} does not match the pools' instances × GPUs"
        )
    return fleet


def _routing(check: _Checker, best: FleetDocument, options: PlanOptions, pool_count: int) -> Routing:
    """The best fleet's routing: ``routing.boundaries_tokens`` (B_short in version 1, upgraded)."""
    if pool_count == 1:
        return Routing.homogeneous()
    if best.routing is None:
        check.fail("best.routing", None, f"the routing of {pool_count} pools")
    bounds = list(best.routing.boundaries_tokens)
    if len(bounds) != pool_count - 1:
        check.fail(
            "best.routing.boundaries_tokens", bounds, f"{pool_count - 1} boundaries for {pool_count} pools"
        )
    try:
        return Routing(tuple(bounds), best.gamma, options.compressibility, options.max_cut_fraction)
    except ValidationError as exc:
        raise ValidationError(f"{check.source}: best: {exc}") from None


def _planned_pool(
    check: _Checker, pool: PoolDocument, name: str, role: str, hardware: PoolHardware
) -> DeployablePool:
    where = f"best.pools.{name}"
    if pool.serving_profile != hardware.serving_name:
        raise ValidationError(
            f"{check.source}: {where}.serving_profile = {excerpt(pool.serving_profile)} does not match "
            f"inputs.profiles.{role}.serving_name {hardware.serving_name!r}"
        )
    if pool.gpus_per_instance != hardware.gpus_per_instance:
        allowed = f"the profile's {hardware.gpus_per_instance}"
        check.fail(f"{where}.gpus_per_instance", pool.gpus_per_instance, allowed)
    if pool.instances > 0 and pool.slots_per_instance < 1:
        allowed = "an integer ≥ 1 (the pool has instances)"
        check.fail(f"{where}.slots_per_instance", pool.slots_per_instance, allowed)
    most = hardware.max_slots(pool.context_tokens)
    if pool.slots_per_instance > max(1, most):  # what vLLM's KV cache (and max_num_seqs) holds
        check.fail(
            f"{where}.slots_per_instance", pool.slots_per_instance, f"at most the {most:,} the profile holds"
        )
    from fleetopt.core.pools import DeployablePool

    return DeployablePool.of_sizing(name, pool, hardware)


def workload_summary(
    fingerprint: WorkloadFingerprint, source: str, prefix: str = "workload_fingerprint"
) -> WorkloadSummary:
    """A :class:`WorkloadSummary` from a fingerprint (:func:`workload_fingerprint`'s, or a plan's)."""
    levels = tuple(fingerprint.total_tokens_quantile_levels)
    quantiles = tuple(fingerprint.total_tokens_quantiles)
    if len(levels) != len(quantiles) or not levels:
        raise ValidationError(
            f"{source}: {prefix}.total_tokens_quantiles has {len(quantiles)} values; expected one per "
            f"level ({len(levels)} levels)"
        )
    tokens = {
        "input": tuple(fingerprint.input_tokens_p50_p90_p99),
        "output": tuple(fingerprint.output_tokens_p50_p90_p99),
    }
    by_level = {round(level, 6): value for level, value in zip(levels, quantiles, strict=True)}
    if all(p in by_level for p in (0.5, 0.9, 0.99)):
        tokens["total"] = tuple(by_level[p] for p in (0.5, 0.9, 0.99))
    arrivals = fingerprint.arrivals
    from fleetopt.core.drift import WorkloadSummary

    return WorkloadSummary(
        quantile_levels=levels,
        total_tokens_quantiles=quantiles,
        token_quantiles=tokens,
        mean_total_tokens=fingerprint.mean_total_tokens,
        alpha=fingerprint.alpha_at_b_short,
        beta=fingerprint.beta_at_gamma,
        arrival_rate_per_s=None if arrivals is None else arrivals.mean_rate_per_s,
        interarrival_scv=None if arrivals is None else arrivals.interarrival_scv,
        digest=fingerprint.sha256,
    )


def schedule_csv(schedule: ScheduleDocument | dict[str, Any]) -> str:
    """A plan's schedule (typed, or the document's ``schedule``) as CSV: one row per window —
    ``start_s,end_s[,start_utc],arrival_rate_per_s,<pool>_instances…,gpus`` (``start_utc`` when the
    schedule has a wall-clock origin; offsets are mod the period when it is periodic)."""
    import csv
    import io

    if isinstance(schedule, dict):
        schedule = from_document(ScheduleDocument, schedule, "plan", "schedule")

    pools = list(schedule.pools)
    origin = schedule.origin_utc
    origin_time = (
        None
        if origin is None
        else datetime.datetime.fromisoformat(origin.replace("Z", "+00:00")).astimezone(datetime.timezone.utc)
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["start_s", "end_s"] + (["start_utc"] if origin_time else []) + ["arrival_rate_per_s"]
    writer.writerow(header + [f"{name}_instances" for name in pools] + ["gpus"])
    for window in schedule.windows:
        row = [f"{window.start_s:g}", f"{window.end_s:g}"]
        if origin_time is not None:
            moment = origin_time + datetime.timedelta(seconds=window.start_s)
            text = moment.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
            row.append(text + "Z")
        row.append(f"{window.arrival_rate_per_s:.6g}")
        row += [str(window.instances[name]) for name in pools] + [str(window.gpus)]
        writer.writerow(row)
    return out.getvalue()
