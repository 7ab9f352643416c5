"""Options and helpers shared by the commands."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from fleetopt.render.output import OutputFormat

FORMAT_OPTION = typer.Option(
    OutputFormat.table, "--format", "-f", help="table for people; json or yaml for machines (same data)."
)
PROFILES_DIR_OPTION = typer.Option(
    None,
    "--profiles-dir",
    help="A folder of your own profiles (models/, gpus/, serving/), searched before the bundled ones.",
    file_okay=False,
)


def profiles_dirs(extra: Path | None) -> tuple[Path, ...]:
    """The profile search path: the user's folder first (if given), then the bundled one."""
    from fleetopt.io.data import bundled_dir

    return ((extra,) if extra is not None else ()) + (bundled_dir("profiles"),)


# Workload reader options, shared by every command that takes a workload (see docs/workloads.md).
INPUT_FORMAT_OPTION = typer.Option(
    None,
    "--input-format",
    help="Override workload format detection: azure, csv, jsonl, json, parquet, summary, cdf-json or "
    "cdf-csv.",
)
LOG_FORMAT_OPTION = typer.Option(
    None,
    "--log-format",
    help="Column preset of a request log: azure, mooncake, burstgpt, litellm, langfuse, helicone, otel, "
    "sglang or vllm-bench (docs/workloads.md).",
)
INPUT_COLUMN_OPTION = typer.Option(None, "--input-column", help="Log column of input (prompt) tokens.")
OUTPUT_COLUMN_OPTION = typer.Option(None, "--output-column", help="Log column of output tokens.")
TIME_COLUMN_OPTION = typer.Option(None, "--time-column", help="Log column of arrival times.")
TIME_UNIT_OPTION = typer.Option(
    None,
    "--time-unit",
    help="Unit of a numeric time column: s, ms, us or ns (default: the preset's, else the column "
    "name's _s/_ms/_us/_ns suffix, else seconds).",
)


def reader_options(
    input_format: str | None,
    log_format: str | None,
    input_column: str | None,
    output_column: str | None,
    time_column: str | None,
    time_unit: str | None,
    split: str | None,
) -> dict:
    """The ``load_workload`` options of the workload options every command shares."""
    return {
        "input_format": input_format,
        "log_format": log_format,
        "input_column": input_column,
        "output_column": output_column,
        "time_column": time_column,
        "time_unit": time_unit,
        "split": split,
    }


SPLIT_OPTION = typer.Option(
    None,
    "--split",
    help="Input/output split of a CDF: fleet-sim, input-fraction:F or output-tokens:N. Default: the "
    "file's mean_input_tokens/mean_output_tokens, else fleet-sim's 80/20 (with a warning).",
)


@contextmanager
def progress_bar(fmt: OutputFormat) -> Iterator[Callable[[int, int], None] | None]:
    """A transient rich progress bar for people at a terminal; nothing otherwise."""
    if fmt is not OutputFormat.table or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("simulating"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"), TimeRemainingColumn(),
        transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("simulate", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance
