"""Time-of-day schedules: the instances each pool needs in every window of a log's rate profile.

With the routing fixed at the plan's best static fleet, every schedule window is sized at the rate
its own slice of the profile gives on the plan's basis (the busiest rate window in it for ``peak``,
its mean for ``mean``, a percentile for ``pNN``), scaled as the plan scales the log (plan mean /
log mean). The schedule is periodic over a week when the log spans one, over a day when it spans
one, and otherwise covers the log's span once. In a periodic schedule a window gathers every rate
window whose middle falls at its offset in the period, from every day (or week) of the log, so a
window's value is the worst of the days at that time. What an autoscaler's floor needs
(docs/planner.md, "Schedules"); the shape is the plan document's ``schedule``.

Rules: a window never gets more instances than the static plan's pool (the static fleet is sized at
the whole log's basis, which bounds every window's on ``peak``; on ``mean`` or ``pNN`` a window may
ask for more, and is held at the static fleet), and never fewer than one for a pool the static plan
runs (a floor of 0 would refuse a window's first request). A window no rate window falls in keeps
the static fleet. GPU-hours are sums of whole GPUs × window seconds / 3,600.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from fleetopt.core.arrivals import WindowCounts, basis_rate_per_s
from fleetopt.core.planner import FleetCandidate, Planner
from fleetopt.errors import ValidationError

DAY_S = 86_400.0
WEEK_S = 7 * DAY_S
#: 1970-01-01 was a Thursday: a week starting on Monday 00:00 UTC begins 3 days after an epoch week.
_MONDAY_OFFSET_S = 4 * DAY_S


@dataclass(frozen=True)
class ScheduleWindow:
    """One window: [start_s, end_s) from the schedule's origin, the rate it was sized for (req/s),
    its mean rate, the instances and GPUs of each pool (in the fleet's order), and how many rate
    windows of the log fall in it (0: none, the static fleet is kept)."""

    start_s: float
    end_s: float
    sizing_rate_per_s: float
    mean_rate_per_s: float
    instances: tuple[int, ...]
    gpus: tuple[int, ...]
    rate_windows: int

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class Schedule:
    """A plan's time-of-day schedule (the plan document's ``schedule``; docs/planner.md).

    ``origin_epoch_s``: the Unix time of offset 0 when the log's clock is absolute (midnight UTC of
    the first arrival's day for a daily schedule, Monday 00:00 UTC of its week for a weekly one, the
    first full rate window's start otherwise), else None (offset 0 is then the first full rate
    window's start on the log's relative clock).
    """

    window_s: float
    period_s: float
    periodic: bool
    origin_epoch_s: float | None
    pool_names: tuple[str, ...]
    rate_basis: str
    windows: tuple[ScheduleWindow, ...]
    static_instances: tuple[int, ...]
    static_gpus: int

    @property
    def gpu_hours_per_period(self) -> float:
        """Σ over windows of GPUs × window hours (exact: whole GPUs × seconds, divided once)."""
        return sum(sum(w.gpus) * w.duration_s for w in self.windows) / 3600.0

    @property
    def static_gpu_hours_per_period(self) -> float:
        """The static fleet's GPUs × period hours."""
        return self.static_gpus * self.period_s / 3600.0


def schedule_period(span_s: float) -> tuple[float, bool]:
    """(period, periodic): a week when the log spans one, a day when it spans one, else its span."""
    if span_s >= WEEK_S:
        return WEEK_S, True
    if span_s >= DAY_S:
        return DAY_S, True
    return span_s, False


def _origin(first_arrival_epoch_s: float | None, period_s: float, periodic: bool) -> float | None:
    if first_arrival_epoch_s is None:
        return None
    if not periodic:
        return first_arrival_epoch_s
    if period_s == WEEK_S:
        return math.floor((first_arrival_epoch_s - _MONDAY_OFFSET_S) / WEEK_S) * WEEK_S + _MONDAY_OFFSET_S
    return math.floor(first_arrival_epoch_s / DAY_S) * DAY_S


def build_schedule(
    planner: Planner, fleet: FleetCandidate, counts: WindowCounts, schedule_window_s: float
) -> Schedule:
    """The schedule of ``fleet`` (its routing fixed) over the log's rate windows ``counts``.

    ``planner`` is the one that sized ``fleet`` (its options give the basis and how the plan scales
    the log: window rate × sizing rate / the log's basis rate).
    """
    options = planner.options
    if not (schedule_window_s > 0 and math.isfinite(schedule_window_s)):
        raise ValidationError(f"--schedule: {schedule_window_s!r} s must be a positive, finite duration")
    if schedule_window_s < counts.window_s:
        raise ValidationError(
            f"--schedule: a {schedule_window_s:g} s window is shorter than the rate window "
            f"{counts.window_s:g} s it is built from; use a longer --schedule or a shorter --rate-window"
        )
    span_s = counts.span_s
    period_s, periodic = schedule_period(span_s)
    origin = _origin(counts.origin_epoch_s, period_s, periodic)
    # offset of the first full rate window from the origin, then every rate window's middle
    first_offset = 0.0 if origin is None or counts.origin_epoch_s is None else counts.origin_epoch_s - origin
    middles = first_offset + (np.arange(counts.windows) + 0.5) * counts.window_s
    if periodic:
        middles = np.mod(middles, period_s)
    window_count = max(1, math.ceil(period_s / schedule_window_s - 1e-9))
    which = np.minimum((middles // schedule_window_s).astype(np.int64), window_count - 1)
    rates = counts.counts.astype(np.float64) / counts.window_s
    log_basis = basis_rate_per_s(counts, options.rate_basis)
    log_mean = float(rates.mean())
    # the plan sizes at mean × factor; a window at its own basis rate r sizes at r × (plan mean / log mean)
    scale = options.mean_rate_per_s / log_mean if log_mean > 0 else 0.0
    static = fleet.pools
    static_instances = tuple(p.instances for p in static)
    windows = []
    for k in range(window_count):
        start, end = float(k * schedule_window_s), float(min((k + 1) * schedule_window_s, period_s))
        mine = rates[which == k]
        if mine.size == 0:
            windows.append(
                ScheduleWindow(
                    start,
                    end,
                    options.sizing_rate_per_s,
                    options.mean_rate_per_s,
                    static_instances,
                    tuple(p.gpus for p in static),
                    0,
                )  # fmt: skip
            )
            continue
        own = WindowCounts(counts.window_s, counts.counts[which == k])
        basis_rate = max(basis_rate_per_s(own, options.rate_basis), float(mine.mean()))
        rate = min(basis_rate, max(log_basis, log_mean)) * scale
        sized = _fleet_at(planner, fleet, rate, float(mine.mean()) * scale)
        instances = tuple(
            min(static_pool.instances, max(pool.instances, 1 if static_pool.instances > 0 else 0))
            if pool.feasible
            else static_pool.instances
            for pool, static_pool in zip(sized, static, strict=True)
        )
        gpus = tuple(n * hw.gpus_per_instance for n, hw in zip(instances, fleet.hardware, strict=True))
        windows.append(
            ScheduleWindow(start, end, rate, float(mine.mean()) * scale, instances, gpus, int(mine.size))
        )
    return Schedule(
        window_s=float(schedule_window_s),
        period_s=float(period_s),
        periodic=periodic,
        origin_epoch_s=origin,
        pool_names=fleet.pool_names,
        rate_basis=options.rate_basis,
        windows=tuple(windows),
        static_instances=static_instances,
        static_gpus=fleet.total_gpus,
    )


def _fleet_at(planner: Planner, fleet: FleetCandidate, rate_per_s: float, mean_rate_per_s: float):
    """The pools of ``fleet``'s routing sized at ``rate_per_s`` (the planner's other options kept)."""
    if not rate_per_s > 0:
        return tuple(replace(p, instances=0, feasible=True) for p in fleet.pools)
    options = replace(
        planner.options,
        sizing_rate_per_s=rate_per_s,
        mean_rate_per_s=min(mean_rate_per_s, rate_per_s),
    )
    again = Planner(
        planner.workload,
        planner.hardware,
        options,
        planner.prepared_statistics(),
    )
    return again.fleet(fleet.routing).pools
