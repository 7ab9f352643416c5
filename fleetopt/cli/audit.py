"""`fleetopt audit`: how much would pool routing (and Compress-and-Route) save, by which estimate?

Back-of-envelope mode: numbers alone — a short-traffic fraction α, a throughput ratio ρ or
profiled per-instance throughputs, an arrival rate, a fleet you run today — turned into every
estimate they allow (closed form, Eq. 8, C&R increment), priced in GPUs and dollars, side by side
with why they differ (:func:`fleetopt.core.savings.audit_savings`).

Workload mode (``--cdf``): the same estimates computed from a real token-length distribution with
the planner's statistics and service model, next to the planner's own answer, plus savings
versus B_short and fleet size versus arrival rate (:func:`fleetopt.core.audit.audit_workload`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION
from fleetopt.defaults import DEFAULT_LONG_CONTEXT_TOKENS, DEFAULT_SERVING
from fleetopt.render.output import OutputFormat, fmt_count, fmt_pct, fmt_usd

#: The workload mode's default P99 TTFT SLO: the papers' 500 ms (FleetOpt §7.1).
DEFAULT_SLO = "500ms"

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


def _draw(console, data: Mapping[str, Any]) -> None:
    from rich.table import Table

    pricing = data["pricing"]
    table = Table(title="fleetopt audit (numbers)", title_justify="left")
    table.add_column("Estimate", no_wrap=True)
    for header in ("Short + long", "Instances", "GPUs", "$/yr", "Savings", "Saved/yr", "Over-pred."):
        table.add_column(header, justify="right")
    for row in data["estimates"]:
        short, long = row["short_instances"], row["long_instances"]
        pools = "–" if short is None else f"{fmt_count(short)} + {fmt_count(long)}"
        factor = row["over_prediction_factor"]
        table.add_row(
            row["name"] + (" *" if row["is_baseline"] else ""),
            pools,
            fmt_count(row["instances"]),
            fmt_count(row["gpus"]),
            fmt_usd(row["cost_per_year_usd"]),
            fmt_pct(row["savings_fraction"]),
            fmt_usd(row["savings_usd_per_year"]),
            "–" if factor is None else f"{factor:.2f}×",
        )
    console.print(table)
    rho = data["throughput_ratio"]
    rho_text = "–" if rho is None else f"{rho:.4g} ({data['throughput_ratio_source']})"
    console.print(
        f"ρ = {rho_text}; ${pricing['gpu_hour_usd']:g}/GPU-hour × {pricing['hours_per_year']:,.0f} h/yr, "
        f"{pricing['gpus_per_instance']} GPU(s) per instance."
    )
    if data["baseline"] is not None:
        console.print(f"* baseline: savings are measured against the {data['baseline']}.")
    console.print("Why they differ:")
    for line in data["why_they_differ"]:
        console.print(f"  - {line}")
    console.print("Assumptions:")
    for row in data["estimates"]:
        console.print(f"  - {row['name']} ({row['source']}): {row['assumptions']}")


def _check_combinations(
    *,
    alpha: str | None,
    rho: float | None,
    mu_short: float | None,
    mu_long: float | None,
    mu_homo: float | None,
    rate: float | None,
    slots_short: int | None,
    slots_long: int | None,
    iteration_base: str | None,
    iteration_per_slot: str | None,
    sizing_options_given: bool,
    beta: str | None,
    compressibility: str | None,
    current_gpus: int | None,
    proposed_gpus: int | None,
) -> None:
    """Refuse missing or contradictory numbers with a usage error (exit 2)."""
    if rho is not None and mu_short is not None and mu_homo is not None:
        raise _usage(
            "--rho contradicts --mu-short/--mu-homo (ρ = μ_short/μ_homo): "
            "give the throughput ratio one way only"
        )
    if (slots_short is None) != (slots_long is None):
        raise _usage("--slots-short and --slots-long go together (the lock-step throughput ratio needs both)")
    if slots_short is None and (iteration_base is not None or iteration_per_slot is not None):
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


def audit(
    alpha: str | None = typer.Option(
        None, "--alpha", help="Short-traffic fraction α = F(B_short), e.g. 0.8 or 80%.", show_default=False
    ),
    rho: float | None = typer.Option(
        None, "--rho", callback=_positive, help="Throughput gain ratio ρ = μ_short/μ_homo (not a slot ratio)."
    ),
    mu_short: float | None = typer.Option(
        None,
        "--mu-short",
        callback=_positive,
        help="Short-pool throughput, req/s per instance (on short traffic).",
    ),
    mu_long: float | None = typer.Option(
        None,
        "--mu-long",
        callback=_positive,
        help="Long-pool throughput, req/s per instance, measured on the ROUTED long traffic (Eq. 8).",
    ),
    mu_homo: float | None = typer.Option(
        None,
        "--mu-homo",
        callback=_positive,
        help="Homogeneous-pool throughput, req/s per instance (full mix).",
    ),
    rate: float | None = typer.Option(
        None, "--rate", callback=_positive, help="Arrival rate λ, requests per second."
    ),
    slots_short: int | None = typer.Option(
        None,
        "--slots-short",
        callback=_positive,
        help="Slots per short-pool instance (lock-step ρ, cliff ratio).",
    ),
    slots_long: int | None = typer.Option(
        None,
        "--slots-long",
        callback=_positive,
        help="Slots per long-pool instance (lock-step ρ, cliff ratio).",
    ),
    iteration_base: str | None = typer.Option(
        None,
        "--iteration-base",
        help="W of t(n) = W + H·n, e.g. 8ms. [default: 8ms, the papers' A100 calibration]",
    ),
    iteration_per_slot: str | None = typer.Option(
        None, "--iteration-per-slot", help="H of t(n) = W + H·n, e.g. 0.65ms. [default: 0.65ms]"
    ),
    headroom_short: float | None = typer.Option(
        None,
        "--headroom-short",
        callback=_headroom,
        help="Short-pool headroom factor (paper: 1.05). [default: 1]",
    ),
    headroom_long: float | None = typer.Option(
        None,
        "--headroom-long",
        callback=_headroom,
        help="Long-pool headroom factor (paper: 1.02). [default: 1]",
    ),
    headroom_homo: float | None = typer.Option(
        None,
        "--headroom-homo",
        callback=_headroom,
        help="Homogeneous headroom factor (paper: 1.08). [default: 1]",
    ),
    whole_instances: bool = typer.Option(
        False, "--whole-instances", help="Round each pool up to whole instances (Eq. 6's ceilings)."
    ),
    beta: str | None = typer.Option(
        None,
        "--beta",
        help="C&R borderline fraction β = F(γB) − F(B), e.g. 0.078 or 7.8%.",
        show_default=False,
    ),
    compressibility: str | None = typer.Option(
        None,
        "--compressibility",
        help="C&R: share p_c of the borderline traffic compressible below B. [default: 1, as in the papers]",
        show_default=False,
    ),
    gpus_per_instance: int | None = typer.Option(
        None,
        "--gpus-per-instance",
        callback=_positive,
        help="GPUs in one serving instance (tensor-parallel size). [default: 1]",
        show_default=False,
    ),
    gpu_hour_usd: float | None = typer.Option(
        None,
        "--gpu-hour-usd",
        callback=_non_negative,
        help="Price of one GPU-hour, USD. [default: 2.21, the papers' A100-80GB, AWS p4d.24xlarge per GPU]",
        show_default=False,
    ),
    current_gpus: int | None = typer.Option(
        None,
        "--current-gpus",
        callback=_positive,
        help="GPUs you run today; the savings baseline when given.",
    ),
    proposed_gpus: int | None = typer.Option(
        None,
        "--proposed-gpus",
        callback=_positive,
        help="A fleet size from elsewhere (a planner, a paper, a quote), priced against the baseline.",
    ),
    cdf: str | None = typer.Option(
        None,
        "--cdf",
        help="Workload mode: a bundled workload (e.g. azure-2023) or a request log / CDF file.",
    ),
    slo: str | None = typer.Option(
        None, "--slo", help="Workload mode: P99 TTFT SLO, e.g. 500ms. [default: 500ms, the papers' SLO]"
    ),
    serving: str | None = typer.Option(
        None,
        "--serving",
        help=f"Workload mode: serving profile of the short pool. [default: {DEFAULT_SERVING}]",
    ),
    serving_long: str | None = typer.Option(
        None, "--serving-long", help="Workload mode: serving profile of the long and homogeneous pools."
    ),
    gpu: str | None = typer.Option(None, "--gpu", help="Workload mode: the --serving model on this GPU."),
    gpu_long: str | None = typer.Option(None, "--gpu-long", help="Workload mode: the long pool on this GPU."),
    long_context: int | None = typer.Option(
        None,
        "--long-context",
        callback=_positive,
        help=f"Workload mode: context of the long pool, tokens. [default: {DEFAULT_LONG_CONTEXT_TOKENS}]",
    ),
    service_model: str | None = typer.Option(
        None,
        "--service-model",
        help="Workload mode: lockstep (Eq. 3 as written) or fleet-sim. [default: lockstep]",
    ),
    max_utilization: float | None = typer.Option(
        None, "--max-utilization", help="Workload mode: utilization cap ρ_max in (0, 1]. [default: 0.85]"
    ),
    b_short: str | None = typer.Option(
        None,
        "--b-short",
        help="Workload mode: boundaries to sweep (tokens, comma list). [default: the planner's candidates]",
    ),
    at_b_short: int | None = typer.Option(
        None,
        "--at-b-short",
        callback=_positive,
        help="Workload mode: the boundary audited in detail. [default: the pool-routing optimum]",
    ),
    gamma: float | None = typer.Option(
        None,
        "--gamma",
        help="Workload mode: C&R band γ of the increment. [default: the planner's cheapest γ at that B]",
    ),
    rates: str | None = typer.Option(
        None,
        "--rates",
        help="Workload mode: arrival rates of the rate sweep, req/s (comma list). [default: 0.1x…10x --rate]",
    ),
    current_context: int | None = typer.Option(
        None,
        "--current-context",
        callback=_positive,
        help="Workload mode: context of the current (homogeneous) fleet, tokens. [default: --long-context]",
    ),
    plot: Path | None = typer.Option(
        None,
        "--plot",
        help="Workload mode: draw the sensitivity views to this .png/.svg/.pdf (needs matplotlib).",
    ),
    input_format: str | None = typer.Option(None, "--input-format", help="Workload mode: the file format."),
    input_column: str | None = typer.Option(None, "--input-column", help="CSV/JSONL column of input tokens."),
    output_column: str | None = typer.Option(
        None, "--output-column", help="CSV/JSONL column of output tokens."
    ),
    time_column: str | None = typer.Option(None, "--time-column", help="CSV/JSONL column of arrival times."),
    split: str | None = typer.Option(
        None, "--split", help="Input/output split of a CDF (docs/workloads.md). [default: fleet-sim]"
    ),
    profiles_dir: Path | None = PROFILES_DIR_OPTION,
    output_format: OutputFormat = FORMAT_OPTION,
) -> None:
    numbers_options = {
        "--alpha": alpha, "--rho": rho, "--mu-short": mu_short, "--mu-long": mu_long, "--mu-homo": mu_homo,
        "--slots-short": slots_short, "--slots-long": slots_long, "--iteration-base": iteration_base,
        "--iteration-per-slot": iteration_per_slot, "--headroom-short": headroom_short,
        "--headroom-long": headroom_long, "--headroom-homo": headroom_homo,
        "--whole-instances": whole_instances or None, "--beta": beta,
        "--gpus-per-instance": gpus_per_instance, "--gpu-hour-usd": gpu_hour_usd,
        "--proposed-gpus": proposed_gpus,
    }  # fmt: skip
    workload_options = {
        "--slo": slo, "--serving": serving, "--serving-long": serving_long, "--gpu": gpu,
        "--gpu-long": gpu_long, "--long-context": long_context, "--service-model": service_model,
        "--max-utilization": max_utilization,
        "--b-short": b_short, "--at-b-short": at_b_short, "--gamma": gamma, "--rates": rates,
        "--current-context": current_context, "--plot": plot, "--input-format": input_format,
        "--input-column": input_column, "--output-column": output_column, "--time-column": time_column,
        "--split": split, "--profiles-dir": profiles_dir,
    }  # fmt: skip
    if cdf is not None:
        mixed = [name for name, value in numbers_options.items() if value is not None]
        if mixed:
            raise _usage(
                f"--cdf (workload mode) cannot be combined with {', '.join(mixed)}: with a workload, α, ρ, "
                "the throughputs and the prices come from the workload and the profiles"
            )
        _workload_mode(
            cdf=cdf, slo=slo, rate=rate, serving=serving, serving_long=serving_long, gpu=gpu,
            gpu_long=gpu_long,
            long_context=long_context, service_model=service_model, max_utilization=max_utilization,
            compressibility=compressibility, b_short=b_short, at_b_short=at_b_short, gamma=gamma, rates=rates,
            current_gpus=current_gpus, current_context=current_context, plot=plot,
            reader_options={
                "input_format": input_format, "input_column": input_column, "output_column": output_column,
                "time_column": time_column, "split": split or "fleet-sim",
            },
            profiles_dir=profiles_dir, output_format=output_format,
        )  # fmt: skip
        return
    stray = [name for name, value in workload_options.items() if value is not None]
    if stray:
        raise _usage(f"{', '.join(stray)} {'needs' if len(stray) == 1 else 'need'} --cdf (the workload mode)")
    gpus_per_instance = 1 if gpus_per_instance is None else gpus_per_instance
    gpu_hour_usd = 2.21 if gpu_hour_usd is None else gpu_hour_usd
    from fleetopt.core.savings import (
        HOURS_PER_YEAR,
        PAPER_ITERATION_BASE_S,
        PAPER_ITERATION_PER_SLOT_S,
        AuditInputs,
        audit_savings,
    )
    from fleetopt.errors import ValidationError
    from fleetopt.io.units import parse_duration_s, parse_fraction
    from fleetopt.render.output import emit

    sizing_options_given = whole_instances or any(
        value is not None for value in (headroom_short, headroom_long, headroom_homo)
    )
    _check_combinations(
        alpha=alpha,
        rho=rho,
        mu_short=mu_short,
        mu_long=mu_long,
        mu_homo=mu_homo,
        rate=rate,
        slots_short=slots_short,
        slots_long=slots_long,
        iteration_base=iteration_base,
        iteration_per_slot=iteration_per_slot,
        sizing_options_given=sizing_options_given,
        beta=beta,
        compressibility=compressibility,
        current_gpus=current_gpus,
        proposed_gpus=proposed_gpus,
    )
    short_fraction = None if alpha is None else parse_fraction(alpha, field="--alpha")
    borderline_fraction = None if beta is None else parse_fraction(beta, field="--beta")
    compressible_fraction = (
        1.0 if compressibility is None else parse_fraction(compressibility, field="--compressibility")
    )
    if (
        short_fraction is not None
        and borderline_fraction is not None
        and short_fraction + borderline_fraction > 1.0
    ):
        raise ValidationError(
            f"--alpha {alpha} plus --beta {beta} is {short_fraction + borderline_fraction:g}; "
            "the borderline band (B, γB] lies above B, so α + β = F(γB) must be ≤ 1"
        )
    inputs = AuditInputs(
        short_fraction=short_fraction,
        throughput_ratio=rho,
        arrival_rate_per_s=rate,
        short_throughput_per_s=mu_short,
        long_throughput_per_s=mu_long,
        homogeneous_throughput_per_s=mu_homo,
        short_slots=slots_short,
        long_slots=slots_long,
        iteration_base_s=(
            PAPER_ITERATION_BASE_S
            if iteration_base is None
            else parse_duration_s(iteration_base, field="--iteration-base")
        ),
        iteration_per_slot_s=(
            PAPER_ITERATION_PER_SLOT_S
            if iteration_per_slot is None
            else parse_duration_s(iteration_per_slot, field="--iteration-per-slot")
        ),
        headroom_short=1.0 if headroom_short is None else headroom_short,
        headroom_long=1.0 if headroom_long is None else headroom_long,
        headroom_homogeneous=1.0 if headroom_homo is None else headroom_homo,
        round_up=whole_instances,
        borderline_fraction=borderline_fraction,
        compressible_fraction=compressible_fraction,
        gpus_per_instance=gpus_per_instance,
        gpu_hour_usd=gpu_hour_usd,
        current_gpus=current_gpus,
        proposed_gpus=proposed_gpus,
    )
    result = audit_savings(inputs)
    data = {
        "mode": "numbers",
        "inputs": {
            "short_fraction": inputs.short_fraction,
            "throughput_ratio": inputs.throughput_ratio,
            "arrival_rate_per_s": inputs.arrival_rate_per_s,
            "short_throughput_per_s": inputs.short_throughput_per_s,
            "long_throughput_per_s": inputs.long_throughput_per_s,
            "homogeneous_throughput_per_s": inputs.homogeneous_throughput_per_s,
            "short_slots": inputs.short_slots,
            "long_slots": inputs.long_slots,
            "iteration_base_s": inputs.iteration_base_s if slots_short is not None else None,
            "iteration_per_slot_s": inputs.iteration_per_slot_s if slots_short is not None else None,
            "headroom_short": inputs.headroom_short,
            "headroom_long": inputs.headroom_long,
            "headroom_homogeneous": inputs.headroom_homogeneous,
            "whole_instances": inputs.round_up,
            "borderline_fraction": inputs.borderline_fraction,
            "compressible_fraction": inputs.compressible_fraction
            if borderline_fraction is not None
            else None,
            "current_gpus": inputs.current_gpus,
            "proposed_gpus": inputs.proposed_gpus,
        },
        "pricing": {
            "gpu_hour_usd": inputs.gpu_hour_usd,
            "gpus_per_instance": inputs.gpus_per_instance,
            "hours_per_year": HOURS_PER_YEAR,
        },
        "throughput_ratio": result.throughput_ratio,
        "throughput_ratio_source": result.throughput_ratio_source,
        "baseline": result.baseline_name,
        "estimates": [dataclasses.asdict(estimate) for estimate in result.estimates],
        "why_they_differ": list(result.explanations),
    }
    emit(data, output_format, _draw)


def _workload_mode(
    *,
    cdf: str,
    slo: str | None,
    rate: float | None,
    serving: str | None,
    serving_long: str | None,
    gpu: str | None,
    gpu_long: str | None,
    long_context: int | None,
    service_model: str | None,
    max_utilization: float | None,
    compressibility: str | None,
    b_short: str | None,
    at_b_short: int | None,
    gamma: float | None,
    rates: str | None,
    current_gpus: int | None,
    current_context: int | None,
    plot: Path | None,
    reader_options: dict,
    profiles_dir: Path | None,
    output_format: OutputFormat,
) -> None:
    """``fleetopt audit --cdf``: parse → load the workload and profiles → audit_workload → render."""
    from fleetopt.api import profile_search_path, rate_with_origin, resolve_pool_hardware_pair
    from fleetopt.core.audit import WorkloadAuditOptions, audit_workload
    from fleetopt.core.planner import PlanOptions
    from fleetopt.io.units import parse_duration_s, parse_fraction, parse_number_list
    from fleetopt.io.workloads import load_workload
    from fleetopt.render.audit import draw_workload_audit, workload_audit_document
    from fleetopt.render.output import emit
    from fleetopt.render.plots import check_plot_path, plot_audit, require_matplotlib

    if plot is not None:  # refuse a bad path or a missing matplotlib before any work
        check_plot_path(plot)
        require_matplotlib()
    ttft_slo_s = parse_duration_s(slo or DEFAULT_SLO, field="--slo")
    p_c = 1.0 if compressibility is None else parse_fraction(compressibility, field="--compressibility")
    b_values = tuple(parse_number_list(b_short, field="--b-short", integer=True)) if b_short else None
    rate_values = tuple(parse_number_list(rates, field="--rates")) if rates else None
    workload = load_workload(cdf, **reader_options)
    dirs = profile_search_path(profiles_dir)
    short_hardware, long_hardware = resolve_pool_hardware_pair(
        serving or DEFAULT_SERVING, serving_long, gpu, gpu_long, dirs
    )
    rate, origin = rate_with_origin(workload, rate)
    plan_options = PlanOptions(
        arrival_rate_per_s=float(rate),
        ttft_slo_s=ttft_slo_s,
        long_context_tokens=DEFAULT_LONG_CONTEXT_TOKENS if long_context is None else long_context,
        b_short_candidates=b_values,
        compressibility=p_c,
        service_model=service_model or "lockstep",
        max_utilization=0.85 if max_utilization is None else max_utilization,
    )
    result = audit_workload(
        workload,
        short_hardware,
        long_hardware,
        WorkloadAuditOptions(
            plan=plan_options,
            b_short_tokens=at_b_short,
            gamma=gamma,
            current_gpus=None if current_gpus is None else float(current_gpus),
            current_context_tokens=current_context,
            rates_per_s=rate_values,
        ),
    )
    if plot is not None:
        plot_audit(
            list(result.threshold_rows),
            list(result.rate_rows),
            plot,
            title=f"fleetopt audit — {cdf}, {rate:,g} req/s, {plan_options.service_model}",
        )
    document = workload_audit_document(
        result,
        workload_label=cdf,
        arrival_rate_origin=origin,
        plot_path=None if plot is None else str(plot),
    )
    emit(document, output_format, draw_workload_audit)


def register(app: typer.Typer) -> None:
    """Add ``fleetopt audit`` to ``app``."""
    app.command("audit", help=_HELP)(audit)
