"""Output that reads well in any terminal: every command's tables fit 80 and 200 columns without
cutting a number or a name, piped output is not hard-wrapped, and nothing prints ∞, −∞ or NaN."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from fleetopt import api
from fleetopt.cli import app
from fleetopt.io.units import fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_usd
from fleetopt.render.layout import FitTable, bullets

runner = CliRunner()

#: One command of each kind, with the cases the issue found broken (grid cells, audit dollars,
#: an empty pool, the kv ratio at a context no sequence fits).
COMMANDS = [
    ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000"],
    ["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000", "--pools", "4"],
    [
        "plan",
        "--cdf",
        "azure-2023-conv",
        "--slo",
        "500ms",
        "--rate",
        "200",
        "--b-short",
        "32768",
        "--gamma",
        "2",
    ],
    ["audit", "--cdf", "azure-2023", "--rate", "1000"],
    ["audit", "--alpha", "0.8", "--rho", "4"],
    ["kv", "--model", "llama-3.1-8b", "--gpu", "a10g", "--weight-dtype", "fp8", "--context", "4096,131072"],
    ["kv", "--model", "qwen3-235b-a22b", "--gpu", "mi300x", "--tp", "8", "--context", "8192,32768"],
    ["workload", "show", "azure-2023", "--b-short", "4096"],
    ["profiles", "list"],
    ["profiles", "show", "llama-3.1-70b-fp8-h100-80gb-tp8-vllm"],
    ["queue", "--servers", "100", "--load", "85"],
]
NOT_A_NUMBER = re.compile(r"∞|\bnan\b|\binf\b", re.IGNORECASE)


def _run(args: list[str], columns: str | None) -> str:
    env = {"COLUMNS": columns} if columns else {"COLUMNS": ""}
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:3]))
@pytest.mark.parametrize("columns", [80, 200])
def test_every_line_fits_the_terminal_and_no_number_is_cut(args: list[str], columns: int) -> None:
    text = _run(args, str(columns))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= columns
    assert "…" not in text  # rich's ellipsis: a cell cut short
    assert not NOT_A_NUMBER.search(text)
    assert all(line == line.rstrip() for line in lines)


def test_the_issues_plan_command_fits_80_columns() -> None:
    """Issue 15, must hold: COLUMNS=80 fleetopt plan --cdf azure-2023 --slo 500ms --rate 1000."""
    text = _run(["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000"], "80")
    assert max(len(line) for line in text.splitlines()) <= 80
    document = api.plan_workload("azure-2023", ttft_slo_s=0.5, mean_rate_per_s=1000).document
    best, homogeneous = document["best"], document["baselines"]["homogeneous"]
    short = best["pools"]["short"]
    numbers = (
        fmt_count(homogeneous["total_gpus"]),  # a grid cell
        f"{fmt_count(best['total_gpus'])}*",  # the best cell, marked
        fmt_usd(homogeneous["cost_per_year_usd"]),
        fmt_usd(best["cost_per_year_usd"]),
        f"{short['slots_per_instance']} of {short['kv_slot_limit']} (KV)",
        fmt_pct(document["savings"]["vs_homogeneous"]),
    )
    for number in numbers:
        assert number in text  # whole, never "1,0…"
    assert "(continued)" in text  # the 12-column grid is stacked, not squeezed


def test_piped_output_is_not_hard_wrapped() -> None:
    """Without a terminal and without COLUMNS, a sentence stays on one line."""
    text = _run(["plan", "--cdf", "azure-2023", "--slo", "500ms", "--rate", "1000"], None)
    (line,) = [line for line in text.splitlines() if line.startswith("routing: ")]
    assert line.endswith("otherwise long")
    assert any(len(line) > 120 for line in text.splitlines())  # the 120-column hard wrap is gone
    assert all(line == line.rstrip() for line in text.splitlines())


def test_profile_names_are_never_split() -> None:
    text = _run(["profiles", "list"], "80")
    for name in (
        "llama-3.1-70b-fp8-h100-80gb-tp8-vllm",
        "qwen3-235b-a22b-mi300x-tp8",
        "deepseek-v3-h200-tp8",
    ):
        assert name in text


def test_an_empty_pool_prints_dashes_not_infinities() -> None:
    text = _run(COMMANDS[2], "120")
    (rate_row,) = [line for line in text.splitlines() if "service rate μ" in line]
    assert rate_row.rstrip("│ ").endswith("–")
    (tpot_row,) = [line for line in text.splitlines() if "iteration time (TPOT)" in line]
    assert tpot_row.rstrip("│ ").endswith("–")


def test_kv_names_the_context_no_sequence_fits() -> None:
    text = _run(COMMANDS[5], "100")
    assert (
        "cliff ratio slots(shortest)/slots(longest): – (no sequence of 131,072 tokens fits an instance)"
        in text
    )


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_formatters_print_a_dash_for_what_is_not_a_number(value: float) -> None:
    assert {fmt_num(value), fmt_seconds(value), fmt_usd(value), fmt_pct(value), fmt_count(value)} == {"–"}


# --- FitTable itself ---------------------------------------------------------------------------------

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.,-%$", min_size=1, max_size=12)


@settings(max_examples=40, deadline=None)
@given(
    width=st.integers(40, 200),
    headers=st.lists(st.lists(_WORDS, min_size=1, max_size=3).map(" ".join), min_size=2, max_size=12),
    data=st.data(),
)
def test_a_fit_table_never_exceeds_the_width_nor_cuts_a_cell(width: int, headers: list[str], data) -> None:
    rows = data.draw(
        st.lists(st.lists(_WORDS, min_size=len(headers), max_size=len(headers)), min_size=1, max_size=5)
    )
    table = FitTable(title="t")
    for k, header in enumerate(headers):
        table.add_column(header, justify="left" if k == 0 else "right")
    for row in rows:
        table.add_row(*row)
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(table)
    lines = buffer.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width
    cells = {cell for row in rows for cell in row}
    text = buffer.getvalue()
    assert "…" not in text
    for cell in cells:  # every cell is printed whole on one line (cells this short never need to wrap)
        assert cell in text


def test_stacked_parts_repeat_the_key_column() -> None:
    table = FitTable(title="grid")
    table.add_column("B", justify="left")
    for k in range(12):
        table.add_column(f"γ{k}")
    table.add_row("4,096", *(f"{1000 + k:,}" for k in range(12)))
    buffer = io.StringIO()
    Console(file=buffer, width=60, color_system=None).print(table)
    text = buffer.getvalue()
    assert text.count("4,096") == len(table.layout(60)) >= 2
    assert "grid (continued)" in text


def test_bullets_wrap_under_their_text() -> None:
    buffer = io.StringIO()
    Console(file=buffer, width=30, color_system=None).print(bullets(["one two three four five six seven"]))
    first, second = buffer.getvalue().splitlines()[:2]
    assert first.startswith("  - one") and second.startswith("    ")


@pytest.fixture(scope="module")
def small_plan(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("layout") / "plan.yaml"
    result = runner.invoke(
        app, ["plan", "--cdf", "azure-2023-conv", "--slo", "500ms", "--rate", "20", "-o", str(path)]
    )
    assert result.exit_code == 0, result.output
    return str(path)


@pytest.mark.parametrize("columns", [80, 200, None])
def test_drift_and_simulate_reports_fit_too(small_plan: str, columns: int | None) -> None:
    runs = {
        "drift": runner.invoke(
            app, ["drift", "--plan", small_plan, "--cdf", "azure-2023-conv", "--rate", "40"],
            env={"COLUMNS": str(columns or "")},
        ),
        "simulate": runner.invoke(
            app, ["simulate", "--plan", small_plan, "--requests", "3000", "--seeds", "1"],
            env={"COLUMNS": str(columns or "")},
        ),
    }  # fmt: skip
    for name, result in runs.items():
        assert result.exit_code in (0, 1), (name, result.output)
        text = result.stdout
        assert text, name
        if columns is not None:
            assert max(len(line) for line in text.splitlines()) <= columns, name
        assert "…" not in text and not NOT_A_NUMBER.search(text), (name, text)
