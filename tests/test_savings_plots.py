"""Sensitivity tables and plots (fleetopt.render.plots) on synthetic rows."""

from __future__ import annotations

import importlib.util
import io
import sys

import pytest
from rich.console import Console

from fleetopt.core.savings import rate_sensitivity_rows, threshold_sensitivity_rows
from fleetopt.errors import FleetoptError, ValidationError
from fleetopt.render import plots

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _threshold_rows():
    return threshold_sensitivity_rows(
        [1024, 2048, 4096, 8192, 16384], [0.5, 0.78, 0.898, 0.95, 0.99], [300, 260, 240, 230, 228], 284
    )


def _rate_rows(with_compression: bool = True):
    # FleetOpt Table 6 (Agent-heavy) GPU columns.
    return rate_sensitivity_rows(
        [100, 200, 500, 1000, 2000],
        [240, 480, 1199, 2397, 4794],
        [227, 454, 1134, 2266, 4531],
        [225, 448, 1119, 2236, 4470] if with_compression else None,
    )


def _text(table) -> str:
    buffer = io.StringIO()
    Console(width=120, file=buffer).print(table)
    return buffer.getvalue()


def test_threshold_table_lists_every_row_with_its_savings() -> None:
    text = _text(plots.savings_vs_threshold_table(_threshold_rows()))
    # 1 − 300/284 = −5.6%; 1 − 230/284 = 19.0% (by hand)
    assert "1,024" in text and "-5.6%" in text
    assert "8,192" in text and "19.0%" in text


def test_rate_table_shows_fleetopt_table6_savings() -> None:
    text = _text(plots.fleet_vs_rate_table(_rate_rows()))
    assert "PR + C&R saving" in text
    for value in ("2,397", "2,266", "2,236", "5.5%", "6.7%", "6.2%"):
        assert value in text


def test_rate_table_without_compression_has_no_cr_columns() -> None:
    text = _text(plots.fleet_vs_rate_table(_rate_rows(with_compression=False)))
    assert "C&R" not in text and "5.4%" in text


def test_rows_missing_keys_are_refused() -> None:
    with pytest.raises(ValidationError, match="savings vs threshold: row 0 lacks savings_fraction"):
        plots.savings_vs_threshold_table(
            [{"b_short_tokens": 1, "short_fraction": 0.5, "routed_gpus": 1, "homogeneous_gpus": 2}]
        )
    with pytest.raises(ValidationError, match="fleet vs rate: no rows to draw"):
        plots.fleet_vs_rate_table([])


def test_bad_plot_path_is_refused_before_drawing(tmp_path) -> None:
    with pytest.raises(ValidationError, match=r"unknown file type '\.txt'; use \.png, \.svg, \.pdf"):
        plots.plot_savings_vs_threshold(_threshold_rows(), tmp_path / "plot.txt")
    with pytest.raises(ValidationError, match="does not exist"):
        plots.plot_fleet_vs_rate(_rate_rows(), tmp_path / "missing" / "plot.png")
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_gives_an_install_hint(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    with pytest.raises(FleetoptError, match=r"--plot needs matplotlib: pip install 'fleetopt\[plot\]'"):
        plots.plot_savings_vs_threshold(_threshold_rows(), tmp_path / "plot.png")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib (the 'plot' extra) is not installed")
@pytest.mark.parametrize(
    ("draw", "rows"),
    [(plots.plot_savings_vs_threshold, _threshold_rows()), (plots.plot_fleet_vs_rate, _rate_rows())],
)
def test_plots_write_a_png_and_nothing_else(draw, rows, tmp_path) -> None:
    target = tmp_path / "plot.png"
    assert draw(rows, target) == target
    assert target.read_bytes()[:8] == PNG_SIGNATURE
    assert [path.name for path in tmp_path.iterdir()] == ["plot.png"]  # no temporary left behind


@pytest.mark.slow
@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib (the 'plot' extra) is not installed")
def test_svg_plot_is_svg(tmp_path) -> None:
    target = plots.plot_fleet_vs_rate(_rate_rows(with_compression=False), tmp_path / "fleet.svg")
    assert b"<svg" in target.read_bytes()[:2000]
