"""`fleetopt audit`: how much would pool routing (and Compress-and-Route) save, by which estimate?

One command, two paths, each parse → one API call → render:

- numbers (back-of-envelope): α, ρ or per-instance throughputs, a rate, a fleet you run today →
  :func:`fleetopt.api.audit_numbers` (:func:`fleetopt.core.savings.audit_savings`) →
  :func:`fleetopt.render.audit.numbers_audit_document`;
- workload (``--cdf``): a token-length distribution with the planner's statistics and service
  model → :func:`fleetopt.api.audit_workload_from_options`
  (:func:`fleetopt.core.audit.audit_workload`) → :func:`fleetopt.render.audit.workload_audit_document`.

This module only declares the options, refuses missing, contradictory or mixed options (usage
errors, exit 2) and picks the path.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION
from fleetopt.defaults import (
    DEFAULT_LONG_CONTEXT_TOKENS,
    DEFAULT_MAX_UTILIZATION,
    PAPER_GPU_HOUR_USD,
    PAPER_SERVING,
)
from fleetopt.render.output import OutputFormat

_HELP = """Estimate the savings of pool routing (and Compress-and-Route), by every estimate.

\b
Workload mode (the planner's statistics and service model):
  fleetopt audit --cdf azure-2023 --rate 1000 [--slo 500ms] [--current-gpus 2000] [--plot audit.png]
Back-of-envelope mode (numbers alone):
Closed form (Eq. 7):       --alpha 0.8 --rho 4
Corrected fleet (Eq. 8):   --alpha 0.917 --mu-short 13.5 --mu-long 0.37 --rate 1000 [--mu-homo 3]
Price a fleet against yours: --current-gpus 1576 --proposed-gpus 1096
                             --gpus-per-instance 8 --gpu-hour-usd 3.67

Throughputs are requests per second per serving instance; GPUs = instances x --gpus-per-instance.
"""


def _positive(value: float | int | None) -> float | int | None:
    if value is not None and not value > 0:
        raise typer.BadParameter(f"must be > 0, got {value}")
    return value


def _headroom(value: float | None) -> float | None:
    if value is not None and not value >= 1.0:
        raise typer.BadParameter(f"must be ≥ 1 (a factor on λ/μ; the paper uses 1.02–1.08), got {value}")
    return value


def _non_negative(value: float | None) -> float | None:
    if value is not None and not value >= 0:
        raise typer.BadParameter(f"must be ≥ 0, got {value}")
    return value


# typer vendors its own click; its UsageError is the base class of typer.BadParameter.
_UsageError = next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "UsageError")


def _usage(message: str) -> Exception:
    """A usage error (exit 2, printed after the command's usage line)."""
    return _UsageError(message)


def _check_combinations(
    args: NumbersArgs, *, rate: float | None, compressibility: str | None, current_gpus: int | None
) -> None:
    """Refuse missing or contradictory numbers with a usage error (exit 2)."""
    alpha, rho, mu_short, mu_long, mu_homo = args.alpha, args.rho, args.mu_short, args.mu_long, args.mu_homo
    slots_short, slots_long, beta, proposed_gpus = (
        args.slots_short,
        args.slots_long,
        args.beta,
        args.proposed_gpus,
    )
    sizing_options_given = args.whole_instances or any(
        value is not None for value in (args.headroom_short, args.headroom_long, args.headroom_homo)
    )
    if rho is not None and mu_short is not None and mu_homo is not None:
        raise _usage(
            "--rho contradicts --mu-short/--mu-homo (ρ = μ_short/μ_homo): "
            "give the throughput ratio one way only"
        )
    if (slots_short is None) != (slots_long is None):
        raise _usage("--slots-short and --slots-long go together (the lock-step throughput ratio needs both)")
    if slots_short is None and (args.iteration_base is not None or args.iteration_per_slot is not None):
        raise _usage("--iteration-base/--iteration-per-slot need --slots-short and --slots-long")
    if mu_long is not None and (alpha is None or mu_short is None or rate is None):
        raise _usage(
            "--mu-long is for the two-pool fleet (Eq. 8), which also needs --alpha, --mu-short and --rate"
        )
    if mu_short is not None and mu_long is None and mu_homo is None:
        raise _usage("--mu-short needs --mu-long (Eq. 8) or --mu-homo (ρ = μ_short/μ_homo)")
    if mu_homo is not None and rate is None and mu_short is None:
        raise _usage("--mu-homo needs --rate (homogeneous fleet) or --mu-short (ρ = μ_short/μ_homo)")
    if rate is not None and mu_homo is None and mu_long is None:
        raise _usage(
            "--rate needs --mu-homo (homogeneous fleet) or --alpha, --mu-short and --mu-long (Eq. 8)"
        )
    if sizing_options_given and rate is None:
        raise _usage("--headroom-short/--headroom-long/--headroom-homo/--whole-instances need --rate")
    if compressibility is not None and beta is None:
        raise _usage("--compressibility is the compressible share of the borderline band: it needs --beta")
    has_rho = rho is not None or (mu_short is not None and mu_homo is not None) or slots_short is not None
    if beta is not None and (alpha is None or not has_rho):
        raise _usage(
            "--beta (C&R) needs --alpha and a throughput ratio (--rho, --mu-short with --mu-homo, or "
            "--slots-short with --slots-long)"
        )
    has_baseline = current_gpus is not None or (rate is not None and mu_homo is not None)
    if proposed_gpus is not None and not has_baseline:
        raise _usage("--proposed-gpus needs a baseline: --current-gpus, or --rate with --mu-homo")
    closed_form = alpha is not None and has_rho
    two_pool = alpha is not None and mu_short is not None and mu_long is not None and rate is not None
    if not (closed_form or two_pool or proposed_gpus is not None):
        if alpha is not None:
            raise _usage(
                "--alpha alone estimates nothing: add --rho (closed form), --slots-short with --slots-long, "
                "or --mu-short, --mu-long and --rate (Eq. 8)"
            )
        raise _usage(
            "nothing to estimate: give --alpha with --rho (closed form), or --alpha, --mu-short, "
            "--mu-long and --rate (Eq. 8), or --current-gpus with --proposed-gpus"
        )


# --- the options (shared declarations; the command below only lists them) -------------------------

_ALPHA = typer.Option(
    None, "--alpha", help="Short-traffic fraction α = F(B_short), e.g. 0.8 or 80%.", show_default=False
)
_RHO = typer.Option(
    None, "--rho", callback=_positive, help="Throughput gain ratio ρ = μ_short/μ_homo (not a slot ratio)."
)
_MU_SHORT = typer.Option(
    None,
    "--mu-short",
    callback=_positive,
    help="Short-pool throughput, req/s per instance (on short traffic).",
)
_MU_LONG = typer.Option(
    None,
    "--mu-long",
    callback=_positive,
    help="Long-pool throughput, req/s per instance, measured on the ROUTED long traffic (Eq. 8).",
)
_MU_HOMO = typer.Option(
    None,
    "--mu-homo",
    callback=_positive,
    help="Homogeneous-pool throughput, req/s per instance (full mix).",
)
_RATE = typer.Option(None, "--rate", callback=_positive, help="Arrival rate λ, requests per second.")
_SLOTS_SHORT = typer.Option(
    None,
    "--slots-short",
    callback=_positive,
    help="Slots per short-pool instance (lock-step ρ, cliff ratio).",
)
_SLOTS_LONG = typer.Option(
    None,
    "--slots-long",
    callback=_positive,
    help="Slots per long-pool instance (lock-step ρ, cliff ratio).",
)
_ITERATION_BASE = typer.Option(
    None,
    "--iteration-base",
    help="W of t(n) = W + H·n, e.g. 8ms. [default: 8ms, the papers' A100 calibration]",
)
_ITERATION_PER_SLOT = typer.Option(
    None, "--iteration-per-slot", help="H of t(n) = W + H·n, e.g. 0.65ms. [default: 0.65ms]"
)
_HEADROOM_SHORT = typer.Option(
    None,
    "--headroom-short",
    callback=_headroom,
    help="Short-pool headroom factor (paper: 1.05). [default: 1]",
)
_HEADROOM_LONG = typer.Option(
    None,
    "--headroom-long",
    callback=_headroom,
    help="Long-pool headroom factor (paper: 1.02). [default: 1]",
)
_HEADROOM_HOMO = typer.Option(
    None,
    "--headroom-homo",
    callback=_headroom,
    help="Homogeneous headroom factor (paper: 1.08). [default: 1]",
)
_WHOLE_INSTANCES = typer.Option(
    False, "--whole-instances", help="Round each pool up to whole instances (Eq. 6's ceilings)."
)
_BETA = typer.Option(
    None,
    "--beta",
    help="C&R borderline fraction β = F(γB) − F(B), e.g. 0.078 or 7.8%.",
    show_default=False,
)
_COMPRESSIBILITY = typer.Option(
    None,
    "--compressibility",
    help="C&R: share p_c of the borderline traffic compressible below B. [default: 1, as in the papers]",
    show_default=False,
)
_GPUS_PER_INSTANCE = typer.Option(
    None,
    "--gpus-per-instance",
    callback=_positive,
    help="GPUs in one serving instance (tensor-parallel size). [default: 1]",
    show_default=False,
)
_GPU_HOUR_USD = typer.Option(
    None,
    "--gpu-hour-usd",
    callback=_non_negative,
    help=f"Price of one GPU-hour, USD. [default: {PAPER_GPU_HOUR_USD:g}, the papers' A100-80GB, "
    "AWS p4d.24xlarge per GPU]",
    show_default=False,
)
_CURRENT_GPUS = typer.Option(
    None,
    "--current-gpus",
    callback=_positive,
    help="GPUs you run today; the savings baseline when given.",
)
_PROPOSED_GPUS = typer.Option(
    None,
    "--proposed-gpus",
    callback=_positive,
    help="A fleet size from elsewhere (a planner, a paper, a quote), priced against the baseline.",
)
_CDF = typer.Option(
    None,
    "--cdf",
    help="Workload mode: a bundled workload (e.g. azure-2023) or a request log / CDF file.",
)
_SLO = typer.Option(
    None, "--slo", help="Workload mode: P99 TTFT SLO, e.g. 500ms. [default: 500ms, the papers' SLO]"
)
_SERVING = typer.Option(
    None,
    "--serving",
    help=f"Workload mode: serving profile of the short pool. [default: {PAPER_SERVING}, the papers']",
)
_SERVING_LONG = typer.Option(
    None, "--serving-long", help="Workload mode: serving profile of the long and homogeneous pools."
)
_GPU = typer.Option(None, "--gpu", help="Workload mode: the --serving model on this GPU.")
_GPU_LONG = typer.Option(None, "--gpu-long", help="Workload mode: the long pool on this GPU.")
_LONG_CONTEXT = typer.Option(
    None,
    "--long-context",
    callback=_positive,
    help=f"Workload mode: context of the long pool, tokens. [default: {DEFAULT_LONG_CONTEXT_TOKENS}]",
)
_SERVICE_MODEL = typer.Option(
    None,
    "--service-model",
    help="Workload mode: lockstep (Eq. 3 as written) or fleet-sim. [default: lockstep]",
)
_MAX_UTILIZATION = typer.Option(
    None,
    "--max-utilization",
    help=f"Workload mode: utilization cap ρ_max in (0, 1]. [default: {DEFAULT_MAX_UTILIZATION:g}]",
)
_B_SHORT = typer.Option(
    None,
    "--b-short",
    help="Workload mode: boundaries to sweep (tokens, comma list). [default: the planner's candidates]",
)
_AT_B_SHORT = typer.Option(
    None,
    "--at-b-short",
    callback=_positive,
    help="Workload mode: the boundary audited in detail. [default: the pool-routing optimum]",
)
_GAMMA = typer.Option(
    None,
    "--gamma",
    help="Workload mode: C&R band γ of the increment. [default: the planner's cheapest γ at that B]",
)
_RATES = typer.Option(
    None,
    "--rates",
    help="Workload mode: arrival rates of the rate sweep, req/s (comma list). [default: 0.1x…10x --rate]",
)
_CURRENT_CONTEXT = typer.Option(
    None,
    "--current-context",
    callback=_positive,
    help="Workload mode: context of the current (homogeneous) fleet, tokens. [default: --long-context]",
)
_PLOT = typer.Option(
    None,
    "--plot",
    help="Workload mode: draw the sensitivity views to this .png/.svg/.pdf (needs matplotlib).",
)
_INPUT_FORMAT = typer.Option(None, "--input-format", help="Workload mode: the file format.")
_LOG_FORMAT = typer.Option(None, "--log-format", help="Workload mode: the request log's column preset.")
_TIME_UNIT = typer.Option(None, "--time-unit", help="Workload mode: unit of a numeric time column.")
_INPUT_COLUMN = typer.Option(None, "--input-column", help="CSV/JSONL column of input tokens.")
_OUTPUT_COLUMN = typer.Option(None, "--output-column", help="CSV/JSONL column of output tokens.")
_TIME_COLUMN = typer.Option(None, "--time-column", help="CSV/JSONL column of arrival times.")
_SPLIT = typer.Option(
    None, "--split", help="Input/output split of a CDF (docs/workloads.md). [default: fleet-sim]"
)


@dataclasses.dataclass(frozen=True)
class NumbersArgs:
    """The numbers-only options, as given (None: not given); field order = the flags' order."""

    alpha: str | None
    rho: float | None
    mu_short: float | None
    mu_long: float | None
    mu_homo: float | None
    slots_short: int | None
    slots_long: int | None
    iteration_base: str | None
    iteration_per_slot: str | None
    headroom_short: float | None
    headroom_long: float | None
    headroom_homo: float | None
    whole_instances: bool
    beta: str | None
    gpus_per_instance: int | None
    gpu_hour_usd: float | None
    proposed_gpus: int | None


@dataclasses.dataclass(frozen=True)
class WorkloadArgs:
    """The workload-only options, as given (None: not given); field order = the flags' order."""

    slo: str | None
    serving: str | None
    serving_long: str | None
    gpu: str | None
    gpu_long: str | None
    long_context: int | None
    service_model: str | None
    max_utilization: float | None
    b_short: str | None
    at_b_short: int | None
    gamma: float | None
    rates: str | None
    current_context: int | None
    plot: Path | None
    input_format: str | None
    log_format: str | None
    input_column: str | None
    output_column: str | None
    time_column: str | None
    time_unit: str | None
    split: str | None
    profiles_dir: Path | None


def _pick(cls: type, given: dict[str, Any]) -> Any:
    return cls(**{f.name: given[f.name] for f in dataclasses.fields(cls)})


def _given_flags(args: NumbersArgs | WorkloadArgs) -> list[str]:
    """The flags of the options that were given (``--whole-instances`` counts only when set)."""
    return [
        "--" + f.name.replace("_", "-")
        for f in dataclasses.fields(args)
        if getattr(args, f.name) not in (None, False)
    ]


def audit(
    alpha: str | None = _ALPHA,
    rho: float | None = _RHO,
    mu_short: float | None = _MU_SHORT,
    mu_long: float | None = _MU_LONG,
    mu_homo: float | None = _MU_HOMO,
    rate: float | None = _RATE,
    slots_short: int | None = _SLOTS_SHORT,
    slots_long: int | None = _SLOTS_LONG,
    iteration_base: str | None = _ITERATION_BASE,
    iteration_per_slot: str | None = _ITERATION_PER_SLOT,
    headroom_short: float | None = _HEADROOM_SHORT,
    headroom_long: float | None = _HEADROOM_LONG,
    headroom_homo: float | None = _HEADROOM_HOMO,
    whole_instances: bool = _WHOLE_INSTANCES,
    beta: str | None = _BETA,
    compressibility: str | None = _COMPRESSIBILITY,
    gpus_per_instance: int | None = _GPUS_PER_INSTANCE,
    gpu_hour_usd: float | None = _GPU_HOUR_USD,
    current_gpus: int | None = _CURRENT_GPUS,
    proposed_gpus: int | None = _PROPOSED_GPUS,
    cdf: str | None = _CDF,
    slo: str | None = _SLO,
    serving: str | None = _SERVING,
    serving_long: str | None = _SERVING_LONG,
    gpu: str | None = _GPU,
    gpu_long: str | None = _GPU_LONG,
    long_context: int | None = _LONG_CONTEXT,
    service_model: str | None = _SERVICE_MODEL,
    max_utilization: float | None = _MAX_UTILIZATION,
    b_short: str | None = _B_SHORT,
    at_b_short: int | None = _AT_B_SHORT,
    gamma: float | None = _GAMMA,
    rates: str | None = _RATES,
    current_context: int | None = _CURRENT_CONTEXT,
    plot: Path | None = _PLOT,
    input_format: str | None = _INPUT_FORMAT,
    log_format: str | None = _LOG_FORMAT,
    input_column: str | None = _INPUT_COLUMN,
    output_column: str | None = _OUTPUT_COLUMN,
    time_column: str | None = _TIME_COLUMN,
    time_unit: str | None = _TIME_UNIT,
    split: str | None = _SPLIT,
    profiles_dir: Path | None = PROFILES_DIR_OPTION,
    output_format: OutputFormat = FORMAT_OPTION,
) -> None:
    given = dict(locals())  # first statement: exactly the options, by parameter name
    numbers, workload = _pick(NumbersArgs, given), _pick(WorkloadArgs, given)
    if cdf is not None:
        mixed = _given_flags(numbers)
        if mixed:
            raise _usage(
                f"--cdf (workload mode) cannot be combined with {', '.join(mixed)}: with a workload, α, ρ, "
                "the throughputs and the prices come from the workload and the profiles"
            )
        _workload_path(cdf, workload, rate, compressibility, current_gpus, output_format)
        return
    stray = _given_flags(workload)
    if stray:
        raise _usage(f"{', '.join(stray)} {'needs' if len(stray) == 1 else 'need'} --cdf (the workload mode)")
    _numbers_path(numbers, rate, compressibility, current_gpus, output_format)


def _numbers_path(
    args: NumbersArgs,
    rate: float | None,
    compressibility: str | None,
    current_gpus: int | None,
    output_format: OutputFormat,
) -> None:
    """Back-of-envelope mode: check the combination → :func:`fleetopt.api.audit_numbers` → render."""
    from fleetopt.api import audit_numbers
    from fleetopt.render.audit import draw_numbers_audit, numbers_audit_document
    from fleetopt.render.output import emit

    _check_combinations(args, rate=rate, compressibility=compressibility, current_gpus=current_gpus)
    result = audit_numbers(
        **dataclasses.asdict(args), rate=rate, compressibility=compressibility, current_gpus=current_gpus
    )
    emit(numbers_audit_document(result), output_format, draw_numbers_audit)


def _workload_path(
    cdf: str,
    args: WorkloadArgs,
    rate: float | None,
    compressibility: str | None,
    current_gpus: int | None,
    output_format: OutputFormat,
) -> None:
    """Workload mode: check the plot → :func:`fleetopt.api.audit_workload_from_options` → render."""
    from fleetopt.api import audit_workload_from_options
    from fleetopt.render.audit import draw_workload_audit, workload_audit_document
    from fleetopt.render.output import emit
    from fleetopt.render.plots import check_plot_path, plot_audit, require_matplotlib

    if args.plot is not None:  # refuse a bad path or a missing matplotlib before any work
        check_plot_path(args.plot)
        require_matplotlib()
    options = dataclasses.asdict(args)
    reader_options = {
        key: options.pop(key)
        for key in ("input_format", "log_format", "input_column", "output_column", "time_column", "time_unit")
    }
    reader_options["split"] = options.pop("split")
    plot = options.pop("plot")
    run = audit_workload_from_options(
        cdf=cdf, rate=rate, compressibility=compressibility, current_gpus=current_gpus,
        reader_options=reader_options, **options,
    )  # fmt: skip
    if plot is not None:
        plan_options = run.audit.options.plan
        rate_text = f"{plan_options.sizing_rate_per_s:,g} req/s"
        title = f"fleetopt audit — {cdf}, {rate_text}, {plan_options.service_model}"
        plot_audit(list(run.audit.threshold_rows), list(run.audit.rate_rows), plot, title=title)
    document = workload_audit_document(
        run.audit,
        workload_label=cdf,
        arrival_rate_origin=run.arrival_rate_origin,
        plot_path=None if plot is None else str(plot),
        split_assumed=run.split_assumed,
    )
    emit(document, output_format, draw_workload_audit)


def register(app: typer.Typer) -> None:
    """Add ``fleetopt audit`` to ``app``."""
    app.command("audit", help=_HELP)(audit)
