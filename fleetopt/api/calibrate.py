"""``fleetopt calibrate``'s API: fit and check a serving profile from measurements (loaded when it runs)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetopt.api import profile_search_path
from fleetopt.errors import ValidationError

# -- calibrating a serving profile from measurements (``fleetopt calibrate``) ------------------


@dataclass(frozen=True)
class CalibrationRun:
    """A fitted calibration: the measurements, the fit, its leave-one-out errors (None when too few
    concurrencies remain without a row), and the profile written (``output``) or None."""

    measurements: Any  # fleetopt.io.measurements.Measurements
    fit: Any  # fleetopt.core.calibrate.Fit
    leave_one_out: tuple[Any, Any] | None
    profile_yaml: str
    output: str | None


@dataclass(frozen=True)
class CalibrationCheck:
    """A serving profile's predictions against measurements, row by row (seconds)."""

    measurements: Any
    profile: str
    predicted_tpot_s: Any
    predicted_ttft_s: Any


def calibrate_from_files(
    files: Sequence[str],
    *,
    row_filter: Any = None,
    prefill_chunk_tokens: int = 8192,
    model: str | None = None,
    gpu: str | None = None,
    tensor_parallel: int | None = None,
    max_num_seqs: int | None = None,
    weight_dtype: str | None = None,
    output: Path | None = None,
    profiles_dir: Path | None = None,
) -> CalibrationRun:
    """Fit (W, H, τ, T0) to measured results (:mod:`fleetopt.core.calibrate`) and build the serving
    profile; with ``output`` write it (after checking that it loads)."""
    import datetime
    import tempfile

    from fleetopt.core.calibrate import fit_iteration_model, leave_one_out_errors
    from fleetopt.io.measurements import measured_profile_yaml, read_measurements
    from fleetopt.io.plans import write_document_atomically
    from fleetopt.io.profiles import load_gpu, load_model, load_serving

    if prefill_chunk_tokens < 1:
        raise ValidationError(f"--chunk: {prefill_chunk_tokens} must be ≥ 1 token")
    measurements = read_measurements(files, row_filter)
    dirs = profile_search_path(profiles_dir)
    if output is not None:
        from fleetopt.io.plans import refuse_overwriting_input

        refuse_overwriting_input(Path(output), [str(f) for f in files])
        needed = (("--model-profile", model), ("--gpu-profile", gpu), ("--tp", tensor_parallel))
        missing = [flag for flag, value in needed if value is None]
        if missing:
            raise ValidationError(f"--output: a serving profile needs {', '.join(missing)}")
    if model is not None and gpu is not None:
        _check_against_hardware(
            measurements, load_model(model, dirs), load_gpu(gpu, dirs), tensor_parallel or 1,
            weight_dtype, prefill_chunk_tokens,
        )  # fmt: skip
    fit = fit_iteration_model(measurements.benchmark, prefill_chunk_tokens)
    leave_one_out = leave_one_out_errors(measurements.benchmark, prefill_chunk_tokens)
    description = f"{', '.join(sorted(set(measurements.formats)))}; {measurements.row_filter.describe()}"
    text = measured_profile_yaml(
        title="A serving profile measured with fleetopt calibrate.",
        model=model or "MODEL", gpu=gpu or "GPU", tensor_parallel=tensor_parallel or 1, fit=fit,
        leave_one_out=leave_one_out, measurements=measurements, description=description,
        date=datetime.date.today().isoformat(), max_num_seqs=max_num_seqs, weight_dtype=weight_dtype,
    )  # fmt: skip
    if output is not None:
        with tempfile.TemporaryDirectory() as folder:
            candidate = Path(folder) / Path(output).name
            candidate.write_text(text, encoding="utf-8")
            load_serving(candidate, dirs)  # the profile must load as written
        write_document_atomically(Path(output), text)
    return CalibrationRun(measurements, fit, leave_one_out, text, None if output is None else str(output))


def _check_against_hardware(
    measurements: Any, model: Any, gpu: Any, tensor_parallel: int, weight_dtype: str | None, chunk: int
) -> None:
    """Refuse a tensor-parallel size vLLM refuses for the model, and rows faster than the instance
    can physically be (fleetopt.core.calibrate.physical_floors)."""
    from fleetopt.core import kv
    from fleetopt.core.calibrate import physical_floors
    from fleetopt.io.measurements import check_physical
    from fleetopt.io.profiles import check_tensor_parallel

    check_tensor_parallel(model, tensor_parallel, "--tp")
    if weight_dtype is not None:  # the rows' precision is known
        bytes_per_weight, peak, dtype = (
            kv.DTYPE_BYTES[weight_dtype],
            gpu.peak_flops_per_s(weight_dtype),
            weight_dtype,
        )
    else:  # any quantization the engine may have used: the floor of the smallest weights, fastest peak
        peaks = [p for p in (gpu.peak_flops_fp8_per_s, gpu.peak_flops_bf16_per_s) if p is not None]
        bytes_per_weight, peak, dtype = min(kv.DTYPE_BYTES.values()), max(peaks, default=None), "any"
    floors = physical_floors(
        measurements.benchmark, chunk,
        parameters_active=model.parameter_count_active,
        weight_bytes_active=model.parameter_count_active * bytes_per_weight,
        peak_flops_per_s=None if peak is None else tensor_parallel * peak,
        memory_bandwidth_bytes_per_s=tensor_parallel * gpu.memory_bandwidth_bytes_per_s,
    )  # fmt: skip
    check_physical(measurements, floors, f"{model.name} ({dtype} weights) on {tensor_parallel} × {gpu.name}")


def check_calibration(
    files: Sequence[str], *, profile: str, row_filter: Any = None, profiles_dir: Path | None = None
) -> CalibrationCheck:
    """A serving profile's predicted TTFT and TPOT for every measured row (its W, H, τ, κ, T0 and
    chunk; the benchmark's prefill overlap from its ``fit`` block when it has one, else 0)."""
    import numpy as np

    from fleetopt.core.calibrate import predict
    from fleetopt.io.measurements import read_measurements
    from fleetopt.io.profiles import load_serving

    serving = load_serving(profile, profile_search_path(profiles_dir))
    measurements = read_measurements(files, row_filter)
    overlap_us = (serving.fit or {}).get("benchmark_prefill_overlap_us", 0.0)
    theta = np.array(
        [
            serving.iteration_base_s, serving.iteration_per_slot_s, serving.prefill_per_token_s,
            serving.iteration_per_kv_token_s, serving.ttft_overhead_s, float(overlap_us) / 1e6,
        ]
    )  # fmt: skip
    tpot, ttft = predict(theta, measurements.benchmark, serving.prefill_chunk_tokens)
    return CalibrationCheck(measurements, serving.name, tpot, ttft)
