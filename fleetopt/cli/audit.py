"""`fleetopt audit`: how much would pool routing (and Compress-and-Route) save, by which estimate?

Back-of-envelope mode (this module, round one): numbers alone — a short-traffic fraction α, a
throughput ratio ρ or profiled per-instance throughputs, an arrival rate, a fleet you run today —
turned into every estimate they allow (closed form, Eq. 8, C&R increment), priced in GPUs and
dollars, side by side with why they differ. The workload mode (``--cdf``, using the planner)
comes in round two and will share this command.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import typer

from fleetopt.cli.common import FORMAT_OPTION
from fleetopt.render.output import OutputFormat

_HELP = """Estimate the savings of pool routing (and Compress-and-Route) from a few numbers.

\b
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


def _fmt_usd(value: float | None) -> str:
    if value is None:
        return "–"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{sign}${magnitude / 1e6:,.2f}M"
    if magnitude >= 1e3:
        return f"{sign}${magnitude / 1e3:,.1f}K"
    return f"{sign}${magnitude:,.0f}"


def _fmt_count(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value - round(value)) < 1e-9 else f"{value:,.1f}"


def _fmt_pct(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.1f}%"


def _draw(console, data: Mapping[str, Any]) -> None:
    from rich.table import Table

    pricing = data["pricing"]
    table = Table(title="fleetopt audit (numbers)", title_justify="left")
    table.add_column("Estimate", no_wrap=True)
    for header in ("Short + long", "Instances", "GPUs", "$/yr", "Savings", "Saved/yr", "Over-pred."):
        table.add_column(header, justify="right")
    for row in data["estimates"]:
        short, long = row["short_instances"], row["long_instances"]
        pools = "–" if short is None else f"{_fmt_count(short)} + {_fmt_count(long)}"
        factor = row["over_prediction_factor"]
        table.add_row(
            row["name"] + (" *" if row["is_baseline"] else ""),
            pools,
            _fmt_count(row["instances"]),
            _fmt_count(row["gpus"]),
            _fmt_usd(row["cost_per_year_usd"]),
            _fmt_pct(row["savings_fraction"]),
            _fmt_usd(row["savings_usd_per_year"]),
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
    gpus_per_instance: int = typer.Option(
        1,
        "--gpus-per-instance",
        callback=_positive,
        help="GPUs in one serving instance (tensor-parallel size).",
    ),
    gpu_hour_usd: float = typer.Option(
        2.21,
        "--gpu-hour-usd",
        callback=_non_negative,
        help="Price of one GPU-hour, USD (default: the papers' A100-80GB rate, AWS p4d.24xlarge per GPU).",
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
    output_format: OutputFormat = FORMAT_OPTION,
) -> None:
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


def register(app: typer.Typer) -> None:
    """Add ``fleetopt audit`` to ``app``."""
    app.command("audit", help=_HELP)(audit)
