"""``fleetopt calibrate``: fit a serving profile's iteration model to measured benchmarks, or check one.

    fleetopt calibrate RESULTS... [--system S --backend B --model M --tp N --precision P]
        [--output profile.yaml --model-profile NAME --gpu-profile NAME] [--chunk 8192]
    fleetopt calibrate RESULTS... --check --profile NAME [filters]

RESULTS: aiconfigurator's measured-results CSV, a plain CSV, `vllm bench serve --save-result` JSON
files or `--append-result` JSON lines, or a GuideLLM benchmarks.json (docs/profiles.md).
"""

from __future__ import annotations

from pathlib import Path

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION
from fleetopt.cli.observe import (
    CA_FILE_OPTION,
    END_OPTION,
    POOL_LABEL_OPTION,
    SELECTOR_OPTION,
    SINCE_OPTION,
    TIMEOUT_OPTION,
    TOKEN_ENV_OPTION,
    TOKEN_FILE_OPTION,
)
from fleetopt.render.output import OutputFormat


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` to ``app``."""
    app.command("calibrate")(calibrate)


def calibrate(
    files: list[str] | None = typer.Argument(
        None, help="Measured results: a CSV, vllm bench JSON files or GuideLLM JSON."
    ),
    prometheus: str | None = typer.Option(
        None,
        "--prometheus",
        help="Instead of FILES: check --profile against production metrics (windows of observed load).",
    ),
    since: str = SINCE_OPTION,
    end: str | None = END_OPTION,
    selector: str | None = SELECTOR_OPTION,
    plan: Path | None = typer.Option(None, "--plan", help="With --prometheus: the plan whose pools to read."),
    pool_label: str | None = POOL_LABEL_OPTION,
    window: str = typer.Option("10min", "--window", help="With --prometheus: the load windows' length."),
    token_env: str | None = TOKEN_ENV_OPTION,
    token_file: Path | None = TOKEN_FILE_OPTION,
    ca_file: str | None = CA_FILE_OPTION,
    timeout: str = TIMEOUT_OPTION,
    system: str | None = typer.Option(None, "--system", help="CSV rows of this system, e.g. h100_sxm."),
    backend: str | None = typer.Option(None, "--backend", help="CSV rows of this backend, e.g. vllm."),
    model: str | None = typer.Option(None, "--model", help="CSV rows of this model_path."),
    tp: int | None = typer.Option(None, "--tp", min=1, help="CSV rows of this tp_size; the profile's TP."),
    precision: str | None = typer.Option(None, "--precision", help="CSV rows of this precision, e.g. fp8."),
    chunk: int = typer.Option(8192, "--chunk", help="max_num_batched_tokens of the measured engine, tokens."),
    protocol: str | None = typer.Option(
        None,
        "--protocol",
        help="CSV rows without a protocol column: closed (default) or batch (started together).",
    ),
    kv_term: bool = typer.Option(
        False, "--kv-term", help="Also fit κ, the cost per KV token held (long inputs)."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the fitted serving profile here."),
    model_profile: str | None = typer.Option(None, "--model-profile", help="Model profile of --output."),
    gpu_profile: str | None = typer.Option(None, "--gpu-profile", help="GPU profile of --output."),
    max_num_seqs: int | None = typer.Option(None, "--max-num-seqs", min=1, help="max_num_seqs of --output."),
    check: bool = typer.Option(False, "--check", help="Check --profile against the measurements instead."),
    profile: str | None = typer.Option(None, "--profile", help="Serving profile to --check."),
    profiles_dir: Path | None = PROFILES_DIR_OPTION,
    fmt: OutputFormat = FORMAT_OPTION,
) -> None:
    """Fit W, H, τ and T0 of a serving profile to measured TTFT/TPOT (each run simulated), or --check one."""
    from fleetopt.api import calibrate_from_files, check_calibration
    from fleetopt.errors import ValidationError
    from fleetopt.io.measurements import RowFilter
    from fleetopt.render.calibrate import calibration_document, check_document, draw_calibration, draw_check
    from fleetopt.render.output import emit

    if prometheus is not None:
        _calibrate_live(prometheus, profile, since, end, selector, plan, pool_label, window, token_env,
                        token_file, ca_file, timeout, profiles_dir, fmt)  # fmt: skip
        return
    if not files:
        raise ValidationError("give the measured results (FILES), or --prometheus URL with --profile")
    row_filter = RowFilter(system=system, backend=backend, model=model, tp=tp, precision=precision)
    if check:
        if profile is None:
            raise ValidationError("--check needs --profile NAME (the serving profile to check)")
        if output is not None:
            raise ValidationError("--check does not write a profile: drop --output")
        result = check_calibration(
            files, profile=profile, row_filter=row_filter, protocol=protocol, profiles_dir=profiles_dir
        )
        emit(check_document(result), fmt, draw_check)
        return
    if profile is not None:
        raise ValidationError("--profile is for --check; to fit a new profile give --output")
    weight_dtype = precision if precision in ("fp8", "bf16", "fp16") else None
    run = calibrate_from_files(
        files, row_filter=row_filter, prefill_chunk_tokens=chunk, model=model_profile, gpu=gpu_profile,
        tensor_parallel=tp, max_num_seqs=max_num_seqs, weight_dtype=weight_dtype, protocol=protocol,
        kv_term=kv_term, output=output, profiles_dir=profiles_dir,
    )  # fmt: skip
    emit(calibration_document(run), fmt, draw_calibration)


def _calibrate_live(prometheus, profile, since, end, selector, plan, pool_label, window, token_env,
                    token_file, ca_file, timeout, profiles_dir, fmt) -> None:  # fmt: skip
    """``calibrate --prometheus``: exit 2 when nothing usable came back (as ``observe``)."""
    from fleetopt.api.observe import calibrate_from_prometheus
    from fleetopt.cli.observe import EXIT_UNUSABLE, parse_end, whole_seconds
    from fleetopt.errors import FleetoptError, ValidationError
    from fleetopt.io.units import parse_duration_s
    from fleetopt.render.observe import draw_production_calibration, production_calibration_document
    from fleetopt.render.output import emit

    try:
        if profile is None:
            raise ValidationError("--prometheus needs --profile NAME (the serving profile to check)")
        result = calibrate_from_prometheus(
            prometheus, profile=profile, since_s=parse_duration_s(since, field="--since"),
            end_s=parse_end(end), selector=selector, plan_path=plan, pool_label=pool_label,
            window_s=whole_seconds(window, "--window"),
            profiles_dir=profiles_dir, token_env=token_env, token_file=token_file, ca_file=ca_file,
            timeout_s=parse_duration_s(timeout, field="--timeout"),
        )  # fmt: skip
    except FleetoptError as exc:
        import typer as _typer

        _typer.echo(f"Error: {exc}", err=True)
        raise _typer.Exit(EXIT_UNUSABLE) from None
    emit(production_calibration_document(result), fmt, draw_production_calibration)
