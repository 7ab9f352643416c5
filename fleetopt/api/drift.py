"""``fleetopt drift``'s API: does yesterday's plan fit today's workload (loaded when it runs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.api import (
    arrival_basis,
    observed_rate_per_s,
)
from fleetopt.core.planner import PlanOptions
from fleetopt.core.workload import Workload
from fleetopt.errors import ValidationError

# -- drift: does yesterday's plan fit today's workload? -----------------------------------------


@dataclass(frozen=True)
class DriftRun:
    """A plan checked against today's workload (``fleetopt drift``): the typed result and its inputs.

    ``rate_origin``: where today's rate came from — ``given``, ``observed`` (the log) or ``planned``.
    """

    result: Any  # fleetopt.core.drift.DriftResult
    plan: Any  # fleetopt.io.plans.PlanFile
    today: Workload
    options: PlanOptions  # the plan's options at today's rate
    tolerances: Any  # fleetopt.core.drift.Tolerances
    current: Any  # fleetopt.core.drift.WorkloadSummary of today's workload
    rate_origin: str

    def report(self, plan_label: str, today_label: str, **live: Any) -> Any:
        """The report, typed (:class:`fleetopt.io.documents.drift.DriftDocument`), the plan named
        ``plan_label`` and today's workload ``today_label``; ``live``: the live section and reasons
        of a check on live metrics (:meth:`fleetopt.api.observe.LiveDriftRun.report`)."""
        from fleetopt.io.documents.build_drift import drift_document

        return drift_document(
            self.result, plan=self.plan.plan_document, plan_path=plan_label, today_label=today_label,
            today_requests=self.today.request_count, rate_origin=self.rate_origin, options=self.options,
            tolerances=self.tolerances, planned=self.plan.summary, current=self.current,
            fleet=self.plan.fleet, **live,
        )  # fmt: skip

    def document(self, plan_label: str, today_label: str) -> dict[str, Any]:
        """The report as plain data (``--format json|yaml``; fields: ``fleetopt schema drift``)."""
        from fleetopt.io.documents.typed import to_document

        return to_document(self.report(plan_label, today_label))


def check_plan_drift(
    plan_path: Path,
    workload: str,
    *,
    mean_rate_per_s: float | None = None,
    tolerances: Any = None,
    reader_options: dict[str, Any] | None = None,
) -> DriftRun:
    """Read a plan (the one plan reader), load today's workload, pick today's rate (given, else the
    log's observed rate, else the planned one) and make the one core call,
    :func:`fleetopt.core.drift.check_drift`."""
    from fleetopt.io.plans import read_plan
    from fleetopt.io.workloads import load_workload

    if mean_rate_per_s is not None and not (0 < mean_rate_per_s < float("inf")):
        raise ValidationError(f"--rate: {mean_rate_per_s:g} req/s must be positive and finite")
    plan_file = read_plan(plan_path)
    today = load_workload(workload, **(reader_options or {}))
    return drift_of_workload(plan_file, today, mean_rate_per_s=mean_rate_per_s, tolerances=tolerances)


def drift_of_workload(
    plan_file: Any,
    today: Workload,
    *,
    mean_rate_per_s: float | None = None,
    tolerances: Any = None,
) -> DriftRun:
    """The drift of a read plan (:func:`fleetopt.io.plans.read_plan`) against a loaded workload
    (a log, or the summary ``fleetopt observe`` makes of live metrics): today's rate (given, else
    the workload's observed rate, else the planned one), its basis, one call to
    :func:`fleetopt.core.drift.check_drift`."""
    import dataclasses

    from fleetopt.core.drift import Tolerances, check_drift
    from fleetopt.io.plans import workload_fingerprint, workload_summary

    tolerances = Tolerances() if tolerances is None else tolerances
    planned = plan_file.options
    if mean_rate_per_s is not None:
        rate, origin = float(mean_rate_per_s), "given"
    elif (observed := observed_rate_per_s(today)) is not None:
        rate, origin = observed, "observed"
    else:
        rate, origin = planned.mean_rate_per_s, "planned"
    fleet = plan_file.fleet
    current = workload_summary(
        workload_fingerprint(today, fleet.b_short_tokens, fleet.gamma), "today's workload"
    )
    # today on the plan's basis: today's profile when its log has one, else the plan's own factor
    factor, dispersion = planned.basis_factor, planned.arrival_dispersion
    if planned.rate_basis != "mean" and planned.rate_window_s is not None:
        from fleetopt.core.arrivals import workload_window_counts

        if workload_window_counts(today, planned.rate_window_s) is not None:
            basis = arrival_basis(today, rate, planned.rate_basis, planned.rate_window_s)
            factor, dispersion = basis.factor, basis.dispersion
    options = dataclasses.replace(
        planned,
        sizing_rate_per_s=rate * factor,
        mean_rate_per_s=None if planned.rate_basis == "mean" else rate,
        arrival_dispersion=dispersion,
    )
    result = check_drift(today, fleet, options, plan_file.summary, current, tolerances)
    return DriftRun(result, plan_file, today, options, tolerances, current, origin)
