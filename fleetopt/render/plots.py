"""Sensitivity views of an audit: tables for the terminal and optional PNG/SVG/PDF plots.

Rows are plain lists of dicts, as built by :func:`fleetopt.core.savings.threshold_sensitivity_rows`
(keys ``b_short_tokens``, ``short_fraction``, ``routed_gpus``, ``homogeneous_gpus``,
``savings_fraction``) and :func:`fleetopt.core.savings.rate_sensitivity_rows` (keys
``arrival_rate_per_s``, ``homogeneous_gpus``, ``routed_gpus``, ``routed_savings_fraction``, and
optionally ``compressed_gpus``, ``compressed_savings_fraction``).

Plots need matplotlib, an optional extra (``pip install 'fleetopt[plot]'``), imported only when a
plot is drawn. A plot is written to a temporary file beside ``path`` and renamed into place, so a
failure never leaves a half-written file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleetopt.errors import FleetoptError, ValidationError
from fleetopt.io.units import fmt_count, fmt_pct

if TYPE_CHECKING:  # rich is imported when a table is drawn, not for --format json|yaml
    from fleetopt.render.layout import FitTable

Rows = Sequence[Mapping[str, Any]]

#: The file types a plot may be written as (matplotlib backends available without extras).
PLOT_SUFFIXES = (".png", ".svg", ".pdf")

_THRESHOLD_KEYS = ("b_short_tokens", "short_fraction", "routed_gpus", "homogeneous_gpus", "savings_fraction")
_RATE_KEYS = ("arrival_rate_per_s", "homogeneous_gpus", "routed_gpus", "routed_savings_fraction")


def _check_rows(rows: Rows, keys: Sequence[str], what: str) -> None:
    if not rows:
        raise ValidationError(f"{what}: no rows to draw")
    for index, row in enumerate(rows):
        missing = [key for key in keys if key not in row]
        if missing:
            raise ValidationError(f"{what}: row {index} lacks {', '.join(missing)} (needs {', '.join(keys)})")


def _has(rows: Rows, key: str) -> bool:
    return all(key in row for row in rows)


def savings_vs_threshold_table(rows: Rows) -> FitTable:
    """A table of savings versus B_short (pool-routing Figure 6 as numbers).

    Rows with the workload audit's optional keys also show the closed form (Eq. 7), Eq. 8 and the
    cheapest C&R fleet at each B.
    """
    from fleetopt.render.layout import FitTable

    _check_rows(rows, _THRESHOLD_KEYS, "savings vs threshold")
    closed, eq8, compressed = (
        _has(rows, "closed_form_savings_fraction"),
        _has(rows, "eq8_savings_fraction"),
        _has(rows, "compressed_gpus"),
    )
    table = FitTable(title="Savings vs B_short")
    headers = ["B_short (tokens)", "α = F(B)", "Homogeneous GPUs", "Routed GPUs", "Savings"]
    headers += (["Closed form"] if closed else []) + (["Eq. 8"] if eq8 else [])
    headers += ["PR + C&R GPUs", "PR + C&R saving"] if compressed else []
    for header in headers:
        table.add_column(header, justify="right")
    for row in rows:
        cells = [
            f"{int(row['b_short_tokens']):,}",
            f"{row['short_fraction']:.3f}",
            fmt_count(row["homogeneous_gpus"]),
            fmt_count(row["routed_gpus"]),
            fmt_pct(row["savings_fraction"]),
        ]
        cells += [fmt_pct(row["closed_form_savings_fraction"])] if closed else []
        cells += [fmt_pct(row["eq8_savings_fraction"])] if eq8 else []
        if compressed:
            cells += [fmt_count(row["compressed_gpus"]), fmt_pct(row["compressed_savings_fraction"])]
        table.add_row(*cells)
    return table


def fleet_vs_rate_table(rows: Rows) -> FitTable:
    """A table of fleet size versus arrival rate (FleetOpt Table 6 layout)."""
    from fleetopt.render.layout import FitTable

    _check_rows(rows, _RATE_KEYS, "fleet vs rate")
    with_compression = all("compressed_gpus" in row for row in rows)
    table = FitTable(title="Fleet size vs arrival rate")
    headers = ["λ (req/s)", "Homogeneous", "Pool routing"]
    headers += ["PR + C&R"] if with_compression else []
    headers += ["PR saving"] + (["PR + C&R saving"] if with_compression else [])
    for header in headers:
        table.add_column(header, justify="right")
    for row in rows:
        cells = [
            f"{row['arrival_rate_per_s']:,g}",
            fmt_count(row["homogeneous_gpus"]),
            fmt_count(row["routed_gpus"]),
        ]
        cells += [fmt_count(row["compressed_gpus"])] if with_compression else []
        cells += [fmt_pct(row["routed_savings_fraction"])]
        cells += [fmt_pct(row["compressed_savings_fraction"])] if with_compression else []
        table.add_row(*cells)
    return table


def _pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or a clear error if it is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise FleetoptError("--plot needs matplotlib: pip install 'fleetopt[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as pyplot

    return pyplot


def _plain_formatter():
    """Tick labels as plain numbers with thousands separators (not 10^k)."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: f"{value:,.0f}")


def require_matplotlib() -> None:
    """Raise the clear FleetoptError now if matplotlib is missing (before any work is done)."""
    _pyplot()


def check_plot_path(path: str | os.PathLike[str]) -> Path:
    """The plot's path if its suffix and folder are usable, else a ValidationError naming it."""
    return _check_path(path)


def _check_path(path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    if target.suffix.lower() not in PLOT_SUFFIXES:
        raise ValidationError(
            f"--plot {str(path)!r}: unknown file type {target.suffix or '(none)'!r}; "
            f"use {', '.join(PLOT_SUFFIXES)}"
        )
    if not target.parent.is_dir():
        raise ValidationError(f"--plot {str(path)!r}: folder {str(target.parent)!r} does not exist")
    return target


def _save(figure, target: Path) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=target.suffix, dir=target.parent)
    os.close(handle)
    try:
        figure.savefig(temporary, dpi=150, bbox_inches="tight")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp creates 0600; give the file normal permissions
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def plot_savings_vs_threshold(rows: Rows, path: str | os.PathLike[str]) -> Path:
    """Plot savings (%) versus B_short (log₂ axis), the shape of pool-routing Figure 6; return the path."""
    _check_rows(rows, _THRESHOLD_KEYS, "savings vs threshold")
    target = _check_path(path)
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(6.0, 3.6))
    try:
        _draw_threshold_axes(axes, rows)
        _save(figure, target)
    finally:
        pyplot.close(figure)
    return target


#: The savings-vs-B series a row may carry: (key, legend label, line style).
_THRESHOLD_SERIES = (
    ("savings_fraction", "Pool routing (planner)", "-"),
    ("compressed_savings_fraction", "Pool routing + C&R (planner)", "-"),
    ("eq8_savings_fraction", "Eq. 8 (routed μ_l)", "--"),
    ("closed_form_savings_fraction", "Closed form α(1 − 1/ρ)", ":"),
)


def _draw_threshold_axes(axes, rows: Rows) -> None:
    thresholds = [int(row["b_short_tokens"]) for row in rows]
    drawn = [(key, label, style) for key, label, style in _THRESHOLD_SERIES if _has(rows, key)]
    for index, (key, label, style) in enumerate(drawn):
        values = [100.0 * float(row[key]) for row in rows]
        axes.plot(thresholds, values, marker="o", linestyle=style, label=label, color=f"C{index}")
    axes.set_xscale("log", base=2)
    axes.set_xticks(thresholds)
    axes.set_xticklabels(
        [f"{b / 1024:g}K" if b >= 1024 else str(b) for b in thresholds], rotation=45 if len(rows) > 8 else 0
    )
    axes.minorticks_off()
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xlabel("Threshold B_short (tokens)")
    axes.set_ylabel("GPU savings vs homogeneous (%)")
    axes.set_title("Savings vs threshold")
    axes.grid(True, alpha=0.3)
    if len(drawn) > 1:
        axes.legend(fontsize="small")


def plot_fleet_vs_rate(rows: Rows, path: str | os.PathLike[str]) -> Path:
    """Plot fleet GPUs versus arrival rate (log–log), one line per fleet, FleetOpt Table 6's shape."""
    _check_rows(rows, _RATE_KEYS, "fleet vs rate")
    target = _check_path(path)
    pyplot = _pyplot()
    figure, (fleet_axes, savings_axes) = pyplot.subplots(1, 2, figsize=(10.0, 3.8))
    try:
        _draw_rate_axes(fleet_axes, savings_axes, rows)
        figure.tight_layout()
        _save(figure, target)
    finally:
        pyplot.close(figure)
    return target


def _draw_rate_axes(fleet_axes, savings_axes, rows: Rows) -> None:
    rates = [float(row["arrival_rate_per_s"]) for row in rows]
    series = [("Homogeneous", "homogeneous_gpus"), ("Pool routing", "routed_gpus")]
    if all("compressed_gpus" in row for row in rows):
        series.append(("Pool routing + C&R", "compressed_gpus"))
    for color_index, (label, key) in enumerate(series):
        fleet_axes.plot(
            rates, [float(row[key]) for row in rows], marker="o", label=label, color=f"C{color_index}"
        )
    fleet_axes.set_xscale("log")
    fleet_axes.set_yscale("log")
    fleet_axes.set_xlabel("Arrival rate λ (req/s)")
    fleet_axes.set_ylabel("Fleet size (GPUs)")
    fleet_axes.set_title("Fleet size vs arrival rate")
    fleet_axes.legend()
    for color_index, (label, key) in enumerate(series[1:], start=1):
        savings_key = key.replace("_gpus", "_savings_fraction")
        savings = [100.0 * float(row[savings_key]) for row in rows]
        savings_axes.plot(rates, savings, marker="o", label=label, color=f"C{color_index}")
    savings_axes.set_xscale("log")
    savings_axes.set_xlabel("Arrival rate λ (req/s)")
    savings_axes.set_ylabel("Savings vs homogeneous (%)")
    savings_axes.set_title("Savings vs arrival rate")
    savings_axes.legend()
    for axes in (fleet_axes, savings_axes):
        axes.xaxis.set_major_formatter(_plain_formatter())
        axes.grid(True, which="both", alpha=0.3)
    from matplotlib.ticker import LogLocator, NullFormatter

    fleet_axes.yaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    fleet_axes.yaxis.set_major_formatter(_plain_formatter())
    fleet_axes.yaxis.set_minor_formatter(NullFormatter())


def plot_audit(threshold_rows: Rows, rate_rows: Rows, path: str | os.PathLike[str], title: str = "") -> Path:
    """The workload audit's two sensitivity views in one figure: savings vs B_short, fleet and savings vs λ.

    Either list may be empty (its panels are left out, at least one must have rows).
    """
    if threshold_rows:
        _check_rows(threshold_rows, _THRESHOLD_KEYS, "savings vs threshold")
    if rate_rows:
        _check_rows(rate_rows, _RATE_KEYS, "fleet vs rate")
    if not threshold_rows and not rate_rows:
        raise ValidationError("audit plot: no rows to draw")
    target = _check_path(path)
    pyplot = _pyplot()
    panels = (1 if threshold_rows else 0) + (2 if rate_rows else 0)
    figure, axes = pyplot.subplots(1, panels, figsize=(5.4 * panels, 4.0), squeeze=False)
    try:
        row_axes = list(axes[0])
        if threshold_rows:
            _draw_threshold_axes(row_axes.pop(0), threshold_rows)
        if rate_rows:
            _draw_rate_axes(row_axes[0], row_axes[1], rate_rows)
        if title:
            figure.suptitle(title)
        figure.tight_layout()
        _save(figure, target)
    finally:
        pyplot.close(figure)
    return target
