"""Plan files: the schema version, the workload fingerprint, the atomic writer and the one reader.

The document itself is built by :mod:`fleetopt.render.plan_document` (it carries words); it is
printed by ``fleetopt plan --format json|yaml``, written by ``--output FILE`` with
:func:`write_document_atomically`, and read back by ``fleetopt drift`` and ``fleetopt simulate``
through :func:`read_plan`. The schema is documented in ``docs/planner.md``; ``SCHEMA_VERSION``
changes whenever a field changes meaning or disappears.
"""

from __future__ import annotations

import datetime
import hashlib
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from fleetopt.core.planner import PlanOptions
from fleetopt.core.routing import Routing, pool_names
from fleetopt.core.service import PoolHardware
from fleetopt.core.workload import Workload, weighted_sum
from fleetopt.errors import ValidationError, excerpt
from fleetopt.io.files import read_text, write_document_atomically, write_files_atomically  # noqa: F401
from fleetopt.io.yamlio import json_loads, safe_load

if TYPE_CHECKING:  # the drift types are built only when a plan is read back (drift, simulate)
    from fleetopt.core.drift import PlannedFleet, PlannedPool, WorkloadSummary

#: Version 2 (fleetopt 0.2): fleets of any number of pools (``pool-1`` … ``pool-K`` beyond two),
#: ``routing.boundaries_tokens``, ``pool_count``, ``inputs.max_pools``, ``best_by_pool_count``.
SCHEMA_VERSION = 2
#: Versions this fleetopt reads (version 1 plans are two-pool or homogeneous plans).
READABLE_SCHEMA_VERSIONS = (1, 2)
PLAN_KIND = "fleetopt-plan"
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
) -> dict[str, Any]:
    """A compact, comparable summary of a workload: sizes, quantiles, α, β, arrivals and a hash."""
    digest = hashlib.sha256()
    for array in (workload.total_tokens, workload.input_tokens, workload.output_tokens, workload.weights):
        digest.update(np.ascontiguousarray(array).tobytes())
    weights = workload.weights / workload.total_weight
    fingerprint: dict[str, Any] = {
        "sha256": digest.hexdigest(),
        "kind": workload.kind,
        "requests": workload.request_count,
        "atoms": int(workload.total_tokens.size),
        "mean_input_tokens": weighted_sum(workload.input_tokens, weights),
        "mean_output_tokens": weighted_sum(workload.output_tokens, weights),
        "mean_total_tokens": weighted_sum(workload.total_tokens, weights),
        "input_tokens_p50_p90_p99": _weighted_quantiles(workload.input_tokens, weights, (0.5, 0.9, 0.99)),
        "output_tokens_p50_p90_p99": _weighted_quantiles(workload.output_tokens, weights, (0.5, 0.9, 0.99)),
        "total_tokens_quantile_levels": list(FINGERPRINT_LEVELS),
        "total_tokens_quantiles": _weighted_quantiles(workload.total_tokens, weights, FINGERPRINT_LEVELS),
    }
    if b_short_tokens is not None:
        alpha = workload.cdf_at(b_short_tokens)
        fingerprint["alpha_at_b_short"] = alpha
        if gamma is not None:
            fingerprint["beta_at_gamma"] = workload.cdf_at(gamma * b_short_tokens) - alpha
    if (workload.request_count or 0) >= 2 and workload.has_arrivals:
        from fleetopt.core.workload_stats import workload_arrival_statistics

        arrivals = workload_arrival_statistics(workload)
        if arrivals is not None:
            fingerprint["arrivals"] = asdict(arrivals)
    return fingerprint


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
    arrival_rate_per_s: float
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
    """

    source: str
    document: dict[str, Any]
    fleet: PlannedFleet
    options: PlanOptions
    summary: WorkloadSummary
    workload: str | None
    workload_reader: dict[str, Any]
    schedule: PlanSchedule | None = None


def read_plan(path: Path) -> PlanFile:
    """Read and check a plan file written by ``fleetopt plan --output`` — the one plan reader.

    ``drift``, ``simulate`` and ``export`` read plans here, so they accept and reject the same
    files. Raises ValidationError naming the file, the field, the value and what is allowed:
    unreadable, truncated, not a plan, an unsupported ``schema_version``, a missing or ill-typed
    field, pools that do not match the routing or the profiles, options outside the model's domain.
    """
    path = Path(path)
    return plan_file_from_document(_load_document(path), f"plan {path}")


def plan_file_from_document(document: Any, source: str) -> PlanFile:
    """Check a plan document (as :func:`read_plan` reads it, or as ``fleetopt plan`` just built it)."""
    if not isinstance(document, dict) or document.get("kind") != PLAN_KIND:
        raise ValidationError(f"{source}: not a fleetopt plan (expected kind: {PLAN_KIND})")
    version = document.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
        raise ValidationError(
            f"{source}: schema_version {version!r} is not supported (this fleetopt reads versions "
            f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))}); re-run fleetopt plan --output to "
            "regenerate it"
        )
    get = _FieldReader(source)
    inputs = get.mapping(document, "inputs")
    options = _plan_options(get, inputs)
    best = document.get("best")
    if not isinstance(best, dict):
        get.fail("best", best, "a fleet (the plan was infeasible or the file is incomplete)")
    fleet = _planned_fleet(get, inputs, best, options)
    summary = workload_summary(
        get.mapping(inputs, "inputs.workload_fingerprint"), source, "inputs.workload_fingerprint"
    )
    workload = inputs.get("workload")
    reader = inputs.get("workload_reader")
    schedule = document.get("schedule")
    return PlanFile(
        source=source,
        document=document,
        fleet=fleet,
        options=options,
        summary=summary,
        workload=workload if isinstance(workload, str) and workload else None,
        workload_reader=_reader_options(reader if isinstance(reader, dict) else {}),
        schedule=None if schedule is None else _schedule(get, schedule, fleet),
    )


def _schedule(get: _FieldReader, schedule: Any, fleet: PlannedFleet) -> PlanSchedule:
    """The plan's ``schedule`` section, checked: windows inside the period, pools of the fleet,
    whole instances that never exceed the static plan's."""
    if not isinstance(schedule, dict):
        get.fail("schedule", schedule, "a mapping (or no schedule at all)")
    window_s = get.number(schedule, "schedule.window_s", positive=True)
    period_s = get.number(schedule, "schedule.period_s", positive=True)
    periodic = schedule.get("periodic")
    if not isinstance(periodic, bool):
        get.fail("schedule.periodic", periodic, "true or false")
    origin = schedule.get("origin_utc")
    origin_utc = None
    if origin is not None:
        try:
            origin_utc = datetime.datetime.fromisoformat(str(origin).replace("Z", "+00:00"))
        except ValueError:
            get.fail(
                "schedule.origin_utc", origin, 'an ISO 8601 time such as "2023-11-16T00:00:00Z", or null'
            )
        if origin_utc.tzinfo is None:
            origin_utc = origin_utc.replace(tzinfo=datetime.timezone.utc)
        origin_utc = origin_utc.astimezone(datetime.timezone.utc)
    names = tuple(pool.name for pool in fleet.pools)
    pools = schedule.get("pools", list(names))
    if not isinstance(pools, list) or tuple(pools) != names:
        get.fail("schedule.pools", pools, f"the fleet's pools {list(names)}")
    static = {pool.name: pool.instances for pool in fleet.pools}
    raw = schedule.get("windows")
    if not isinstance(raw, list) or not raw:
        get.fail("schedule.windows", raw, "a non-empty list of windows")
    windows = []
    for k, window in enumerate(raw):
        where = f"schedule.windows[{k}]"
        if not isinstance(window, dict):
            get.fail(where, window, "a mapping with start_s, end_s, arrival_rate_per_s and instances")
        start = get.number(window, f"{where}.start_s")
        end = get.number(window, f"{where}.end_s")
        if not 0 <= start < end <= period_s:
            get.fail(f"{where}.end_s", end, f"0 ≤ start_s ({start:g}) < end_s ≤ period_s ({period_s:g})")
        counts = get.mapping(window, f"{where}.instances")
        instances = {}
        for name in names:
            count = get.integer(counts, f"{where}.instances.{name}")
            if count > static[name]:
                get.fail(
                    f"{where}.instances.{name}", count, f"at most the static plan's {static[name]} instances"
                )
            instances[name] = count
        rate = get.number(window, f"{where}.arrival_rate_per_s", optional=True)
        windows.append(ScheduleWindow(start, end, 0.0 if rate is None else rate, instances))
    windows.sort(key=lambda w: w.start_s)
    for before, after in zip(windows, windows[1:], strict=False):
        if after.start_s < before.end_s:
            get.fail("schedule.windows", f"{before.start_s:g}–{before.end_s:g} and {after.start_s:g}–"
                     f"{after.end_s:g}", "windows that do not overlap")  # fmt: skip
    basis = schedule.get("rate_basis")
    return PlanSchedule(
        window_s=window_s,
        period_s=period_s,
        periodic=periodic,
        origin_utc=origin_utc,
        pools=names,
        windows=tuple(windows),
        rate_basis=basis if isinstance(basis, str) else None,
        gpu_hours_per_period=get.number(schedule, "schedule.gpu_hours_per_period", optional=True),
        static_gpu_hours_per_period=get.number(
            schedule, "schedule.static_gpu_hours_per_period", optional=True
        ),
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


def _reader_options(recorded: dict[str, Any]) -> dict[str, Any]:
    """``load_workload`` options that read the plan's workload the way the plan read it."""
    keys = ("input_format", "log_format", "input_column", "output_column", "time_column", "time_unit")
    reader = {key: recorded[key] for key in keys if isinstance(recorded.get(key), str)}
    if isinstance(recorded.get("split_model"), str):
        reader["split"] = recorded["split_model"]
    return reader


def _plan_options(get: _FieldReader, inputs: dict[str, Any]) -> PlanOptions:
    from fleetopt.core.service import SERVICE_MODELS

    for key in ("arrival_rate_per_s", "ttft_slo_s", "max_utilization", "compressibility"):
        value = inputs.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
            get.fail(f"inputs.{key}", value, "a non-negative number")
    model = inputs.get("service_model")
    if model not in SERVICE_MODELS:
        get.fail("inputs.service_model", model, " or ".join(SERVICE_MODELS))
    tpot = inputs.get("tpot_slo_s")
    max_pools = inputs.get("max_pools", 2)
    mean_rate = get.number(inputs, "inputs.arrival_rate_per_s", positive=True)
    sizing_rate = get.number(inputs, "inputs.sizing_rate_per_s", optional=True, positive=True)
    options = PlanOptions(
        arrival_rate_per_s=mean_rate if sizing_rate is None else sizing_rate,
        ttft_slo_s=get.number(inputs, "inputs.ttft_slo_s", positive=True),
        long_context_tokens=get.integer(inputs, "inputs.long_context_tokens", minimum=1),
        b_short_candidates=tuple(get.integers(inputs, "inputs.b_short_candidates")),
        gammas=tuple(get.numbers(inputs, "inputs.gammas")),
        compressibility=get.number(inputs, "inputs.compressibility"),
        service_model=model,
        max_utilization=get.number(inputs, "inputs.max_utilization", positive=True),
        quantile=get.number(inputs, "inputs.quantile", positive=True),
        tpot_slo_s=None if tpot is None else get.number(inputs, "inputs.tpot_slo_s", positive=True),
        max_pools=max_pools if isinstance(max_pools, int) and not isinstance(max_pools, bool) else -1,
        **_basis_options(get, inputs),
    )
    try:
        options.validate()
    except ValidationError as exc:
        raise ValidationError(f"{get.source}: inputs: {exc}") from None
    return options


def _basis_options(get: _FieldReader, inputs: dict[str, Any]) -> dict[str, Any]:
    """The rate basis a plan sized on (``inputs.rate_basis``; absent in plans before it: the mean)."""
    basis = inputs.get("rate_basis")
    if basis is None:
        return {}
    if not isinstance(basis, dict):
        get.fail("inputs.rate_basis", basis, "a mapping (basis, window_s, mean_rate_per_s, …)")
    name = basis.get("basis")
    if not isinstance(name, str):
        get.fail("inputs.rate_basis.basis", name, "mean, peak or pNN")
    points = basis.get("arrival_dispersion") or []
    if not isinstance(points, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(_is_number(v) for v in p) for p in points
    ):
        get.fail(
            "inputs.rate_basis.arrival_dispersion", points, "a list of [time scale s, index of dispersion]"
        )
    window = basis.get("window_s")
    return {
        "rate_basis": name,
        "mean_arrival_rate_per_s": get.number(inputs, "inputs.arrival_rate_per_s", positive=True),
        "rate_window_s": None
        if window is None
        else get.number(basis, "inputs.rate_basis.window_s", positive=True),
        "arrival_dispersion": tuple((float(a), float(b)) for a, b in points),
    }


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _planned_fleet(
    get: _FieldReader, inputs: dict[str, Any], best: dict[str, Any], options: PlanOptions
) -> PlannedFleet:
    """The best fleet: its pools by name (shortest first), their hardware and the routing."""
    source = get.source
    profiles = get.mapping(inputs, "inputs.profiles")
    hardware = {
        role: hardware_from_document(
            get.mapping(profiles, f"inputs.profiles.{role}"), source=source, field=f"inputs.profiles.{role}"
        )
        for role in ("short", "long")
    }
    pools_doc = get.mapping(best, "best.pools")
    names = pool_names(len(pools_doc)) if pools_doc else ()
    if not pools_doc or set(pools_doc) != set(names):
        get.fail(
            "best.pools",
            sorted(pools_doc),
            "homogeneous; short and long; or pool-1 … pool-K (K ≥ 3)",
        )
    routing = _routing(get, best, options, len(names))
    pools = []
    for index, name in enumerate(names):
        role = "long" if index == len(names) - 1 else "short"
        pools.append(
            _planned_pool(get, get.mapping(pools_doc, f"best.pools.{name}"), name, role, hardware[role])
        )
    for pool, boundary in zip(pools, routing.boundaries_tokens, strict=False):
        if pool.context_tokens < boundary:
            get.fail(
                f"best.pools.{pool.name}.context_tokens", pool.context_tokens, f"≥ its boundary {boundary}"
            )
    from fleetopt.core.drift import PlannedFleet

    fleet = PlannedFleet(
        routing=routing,
        pools=tuple(pools),
        total_gpus=get.integer(best, "best.total_gpus"),
        cost_per_hour_usd=get.number(best, "best.cost_per_hour_usd", positive=True),
    )
    if fleet.total_gpus != sum(p.instances * p.hardware.gpus_per_instance for p in pools):
        raise ValidationError(
            f"{source}: best.total_gpus = {fleet.total_gpus} does not match the pools' instances × GPUs"
        )
    return fleet


def _routing(get: _FieldReader, best: dict[str, Any], options: PlanOptions, pool_count: int) -> Routing:
    """The best fleet's routing: ``routing.boundaries_tokens`` (version 2) or ``b_short_tokens``."""
    if pool_count == 1:
        return Routing.homogeneous()
    routing_doc = best.get("routing")
    if isinstance(routing_doc, dict) and "boundaries_tokens" in routing_doc:
        bounds = get.integers(routing_doc, "best.routing.boundaries_tokens")
    else:
        bounds = [get.integer(best, "best.b_short_tokens", minimum=1)]
    if len(bounds) != pool_count - 1:
        get.fail(
            "best.routing.boundaries_tokens", bounds, f"{pool_count - 1} boundaries for {pool_count} pools"
        )
    gamma = get.number(best, "best.gamma")
    try:
        return Routing(tuple(bounds), gamma, options.compressibility)
    except ValidationError as exc:
        raise ValidationError(f"{get.source}: best: {exc}") from None


def _planned_pool(
    get: _FieldReader, pool: dict[str, Any], name: str, role: str, hardware: PoolHardware
) -> PlannedPool:
    where = f"best.pools.{name}"
    serving = pool.get("serving_profile")
    if serving != hardware.serving_name:
        raise ValidationError(
            f"{get.source}: {where}.serving_profile = {serving!r} does not match "
            f"inputs.profiles.{role}.serving_name {hardware.serving_name!r}"
        )
    gpus = get.integer(pool, f"{where}.gpus_per_instance", minimum=1)
    if gpus != hardware.gpus_per_instance:
        get.fail(f"{where}.gpus_per_instance", gpus, f"the profile's {hardware.gpus_per_instance}")
    instances = get.integer(pool, f"{where}.instances")
    slots = get.integer(pool, f"{where}.slots_per_instance", minimum=1 if instances > 0 else 0)
    context = get.integer(pool, f"{where}.context_tokens", minimum=1)
    if slots > max(1, hardware.max_slots(context)):  # what vLLM's KV cache (and max_num_seqs) holds
        get.fail(
            f"{where}.slots_per_instance",
            slots,
            f"at most the {hardware.max_slots(context):,} the profile holds",
        )
    from fleetopt.core.drift import PlannedPool

    return PlannedPool(
        name=name,
        hardware=hardware,
        instances=instances,
        slots_per_instance=slots,
        context_tokens=context,
        planned_arrival_rate_per_s=get.number(pool, f"{where}.arrival_rate_per_s", optional=True),
        planned_utilization=get.number(pool, f"{where}.utilization", optional=True),
        planned_p99_ttft_s=get.number(pool, f"{where}.p99_ttft_s", optional=True),
        planned_p99_wait_s=get.number(pool, f"{where}.p99_wait_s", optional=True),
        planned_iteration_s=get.number(pool, f"{where}.iteration_s", optional=True),
        planned_mean_service_s=get.number(pool, f"{where}.mean_service_s", optional=True),
        planned_arrival_scv=get.number(pool, f"{where}.arrival_scv", optional=True),
    )


def workload_summary(
    fingerprint: dict[str, Any], source: str, prefix: str = "workload_fingerprint"
) -> WorkloadSummary:
    """A :class:`WorkloadSummary` from a fingerprint (:func:`workload_fingerprint`'s dictionary)."""
    get = _FieldReader(source)
    arrivals = fingerprint.get("arrivals")
    arrivals = arrivals if isinstance(arrivals, dict) else {}
    tokens = {}
    for column in ("input", "output"):
        key = f"{column}_tokens_p50_p90_p99"
        if fingerprint.get(key) is not None:
            values = tuple(get.integers(fingerprint, f"{prefix}.{key}"))
            if len(values) != 3:
                get.fail(f"{prefix}.{key}", f"{len(values)} values", "three (p50, p90, p99)")
            tokens[column] = values
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
    from fleetopt.core.drift import WorkloadSummary

    return WorkloadSummary(
        quantile_levels=levels,
        total_tokens_quantiles=quantiles,
        token_quantiles=tokens,
        mean_total_tokens=get.number(fingerprint, f"{prefix}.mean_total_tokens", optional=True),
        alpha=get.number(fingerprint, f"{prefix}.alpha_at_b_short", optional=True),
        beta=get.number(fingerprint, f"{prefix}.beta_at_gamma", optional=True),
        arrival_rate_per_s=get.number(arrivals, f"{prefix}.arrivals.mean_rate_per_s", optional=True),
        interarrival_scv=get.number(arrivals, f"{prefix}.arrivals.interarrival_scv", optional=True),
        digest=digest if isinstance(digest, str) else None,
    )


class _FieldReader:
    """Typed access to plan fields; every failure names the file, the field, the value, what is allowed."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, field: str, value: Any, allowed: str) -> NoReturn:
        if value is None:
            raise ValidationError(
                f"{self.source}: {field} is missing (the file may be truncated); expected {allowed}"
            )
        raise ValidationError(f"{self.source}: {field} = {excerpt(value)} is invalid; expected {allowed}")

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
        value = parent.get(self._leaf(field))
        if value is None and optional:
            return None
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or (positive and value <= 0)
        ):
            self.fail(field, value, "a positive finite number" if positive else "a finite number")
        return float(value)

    def integer(self, parent: dict[str, Any], field: str, minimum: int = 0) -> int:
        value = parent.get(self._leaf(field))
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self.fail(field, value, f"an integer ≥ {minimum}")
        return value

    def numbers(self, parent: dict[str, Any], field: str) -> list[float]:
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


#: Hardware fields that may be 0 (the first is in every plan; the rest came with token-level costs).
_NON_NEGATIVE_HARDWARE = (
    "iteration_per_slot_s",
    "prefill_per_token_s",
    "iteration_per_kv_token_s",
    "ttft_overhead_s",
)
#: Hardware fields that are a positive number or null (unknown).
_OPTIONAL_POSITIVE_HARDWARE = (
    "kv_bytes_per_token",
    "peak_flops_per_s",
    "memory_bandwidth_bytes_per_s",
    "parameters_active",
    "weight_bytes",
)


def hardware_from_document(document: Any, *, source: str = "plan", field: str = "profiles") -> PoolHardware:
    """The :class:`PoolHardware` written by :func:`hardware_document`, checked field by field.

    Raises ValidationError naming ``source``, the field, the value and what is allowed.
    """
    from dataclasses import fields

    if not isinstance(document, dict):
        raise ValidationError(f"{source}: {field} = {document!r} is invalid; expected a mapping")
    known = {f.name for f in fields(PoolHardware)}
    unknown = sorted(set(document) - known)
    if unknown:
        raise ValidationError(f"{source}: {field} has unknown field(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for item in fields(PoolHardware):
        value = document.get(item.name)
        name = f"{field}.{item.name}"
        if item.name in ("serving_name", "model_name", "gpu_name"):
            if not isinstance(value, str) or not value:
                raise ValidationError(f"{source}: {name} = {value!r} is invalid; expected a name")
        elif item.name in ("max_num_seqs", "max_context_tokens"):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValidationError(
                    f"{source}: {name} = {value!r} is invalid; expected an integer ≥ 1 or null"
                )
        elif item.name in ("gpus_per_instance", "prefill_chunk_tokens", "calibration_context_tokens",
                           "kv_capacity_tokens", "kv_block_tokens"):  # fmt: skip
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(f"{source}: {name} = {value!r} is invalid; expected an integer ≥ 1")
        elif item.name in _OPTIONAL_POSITIVE_HARDWARE:
            if value is not None and (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or not (math.isfinite(value) and value > 0)
            ):
                raise ValidationError(
                    f"{source}: {name} = {value!r} is invalid; expected a positive number or null"
                )
            value = None if value is None else float(value)
        else:
            positive = item.name not in _NON_NEGATIVE_HARDWARE
            if value is None and item.name in _NON_NEGATIVE_HARDWARE[1:]:
                value = 0.0  # written before schema 3 had token-level costs
            if (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
                or (positive and value == 0)
            ):
                allowed = "a positive number" if positive else "a number ≥ 0"
                raise ValidationError(f"{source}: {name} = {value!r} is invalid; expected {allowed}")
            value = float(value)
        values[item.name] = value
    return PoolHardware(**values)


def schedule_csv(schedule: dict[str, Any]) -> str:
    """A plan's schedule (the document's ``schedule``) as CSV: one row per window —
    ``start_s,end_s[,start_utc],arrival_rate_per_s,<pool>_instances…,gpus`` (``start_utc`` when the
    schedule has a wall-clock origin; offsets are mod the period when it is periodic)."""
    import csv
    import datetime
    import io

    pools = list(schedule["pools"])
    origin = schedule.get("origin_utc")
    origin_time = (
        None
        if origin is None
        else datetime.datetime.fromisoformat(origin.replace("Z", "+00:00")).astimezone(datetime.timezone.utc)
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["start_s", "end_s"] + (["start_utc"] if origin_time else []) + ["arrival_rate_per_s"]
    writer.writerow(header + [f"{name}_instances" for name in pools] + ["gpus"])
    for window in schedule["windows"]:
        row = [f"{window['start_s']:g}", f"{window['end_s']:g}"]
        if origin_time is not None:
            moment = origin_time + datetime.timedelta(seconds=window["start_s"])
            text = moment.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
            row.append(text + "Z")
        row.append(f"{window['arrival_rate_per_s']:.6g}")
        row += [str(window["instances"][name]) for name in pools] + [str(window["gpus"])]
        writer.writerow(row)
    return out.getvalue()
