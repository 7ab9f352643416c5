"""``fleetopt calibrate``: fit a serving profile's iteration model to measured benchmarks, or check one.

    fleetopt calibrate RESULTS... [--system S --backend B --model M --tp N --precision P]
        [--output profile.yaml --model-profile NAME --gpu-profile NAME] [--chunk 8192]
    fleetopt calibrate RESULTS... --check --profile NAME [filters]

RESULTS: aiconfigurator's measured-results CSV, `vllm bench serve --save-result` JSON files, or a
GuideLLM benchmarks.json (docs/profiles.md).
"""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION
from fleetopt.render.output import OutputFormat


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` to ``app``."""
    app.command("calibrate")(calibrate)


def calibrate(
    files: list[str] = typer.Argument(
        ..., help="Measured results: a CSV, vllm bench JSON files or GuideLLM JSON."
    ),
    system: str | None = typer.Option(None, "--system", help="CSV rows of this system, e.g. h100_sxm."),
    backend: str | None = typer.Option(None, "--backend", help="CSV rows of this backend, e.g. vllm."),
    model: str | None = typer.Option(None, "--model", help="CSV rows of this model_path."),
    tp: int | None = typer.Option(None, "--tp", min=1, help="CSV rows of this tp_size; the profile's TP."),
    precision: str | None = typer.Option(None, "--precision", help="CSV rows of this precision, e.g. fp8."),
    chunk: int = typer.Option(8192, "--chunk", help="max_num_batched_tokens of the measured engine, tokens."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the fitted serving profile here."),
    model_profile: str | None = typer.Option(None, "--model-profile", help="Model profile of --output."),
    gpu_profile: str | None = typer.Option(None, "--gpu-profile", help="GPU profile of --output."),
    max_num_seqs: int | None = typer.Option(None, "--max-num-seqs", min=1, help="max_num_seqs of --output."),
    check: bool = typer.Option(False, "--check", help="Check --profile against the measurements instead."),
    profile: str | None = typer.Option(None, "--profile", help="Serving profile to --check."),
    profiles_dir: Path | None = PROFILES_DIR_OPTION,
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Fit W, H, τ and T0 of a serving profile to measured TTFT/TPOT (least squares), or --check one."""
    from fleetopt.api import calibrate_from_files, check_calibration
    from fleetopt.errors import ValidationError
    from fleetopt.io.measurements import RowFilter
    from fleetopt.render.calibrate import calibration_document, check_document, draw_calibration, draw_check
    from fleetopt.render.output import emit

    row_filter = RowFilter(system=system, backend=backend, model=model, tp=tp, precision=precision)
    if check:
        if profile is None:
            raise ValidationError("--check needs --profile NAME (the serving profile to check)")
        if output is not None:
            raise ValidationError("--check does not write a profile: drop --output")
        result = check_calibration(files, profile=profile, row_filter=row_filter, profiles_dir=profiles_dir)
        emit(check_document(result), fmt, draw_check)
        return
    if profile is not None:
        raise ValidationError("--profile is for --check; to fit a new profile give --output")
    weight_dtype = precision if precision in ("fp8", "bf16", "fp16") else None
    run = calibrate_from_files(
        files, row_filter=row_filter, prefill_chunk_tokens=chunk, model=model_profile, gpu=gpu_profile,
        tensor_parallel=tp, max_num_seqs=max_num_seqs, weight_dtype=weight_dtype, output=output,
        profiles_dir=profiles_dir,
    )  # fmt: skip
    emit(calibration_document(run), fmt, draw_calibration)
