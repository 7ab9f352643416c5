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
    protocol: str | None = None,
    kv_term: bool = False,
    output: Path | None = None,
    profiles_dir: Path | None = None,
) -> CalibrationRun:
    """Fit (W, H, τ, T0; κ with ``kv_term``) to measured results by simulating each row under its
    protocol (:mod:`fleetopt.core.calibrate`) and build the serving profile; with ``output`` write it
    (after checking that it loads). ``protocol``: the protocol of CSV rows that do not say."""
    import datetime
    import tempfile

    from fleetopt.core.calibrate import fit_iteration_model, leave_one_out_errors
    from fleetopt.io.measurements import measured_profile_yaml, read_measurements
    from fleetopt.io.plans import write_document_atomically
    from fleetopt.io.profiles import load_serving

    if prefill_chunk_tokens < 1:
        raise ValidationError(f"--chunk: {prefill_chunk_tokens} must be ≥ 1 token")
    measurements = read_measurements(files, row_filter, protocol=protocol)
    dirs = profile_search_path(profiles_dir)
    if output is not None:
        from fleetopt.io.plans import refuse_overwriting_input

        refuse_overwriting_input(Path(output), [str(f) for f in files])
        needed = (("--model-profile", model), ("--gpu-profile", gpu), ("--tp", tensor_parallel))
        missing = [flag for flag, value in needed if value is None]
        if missing:
            raise ValidationError(f"--output: a serving profile needs {', '.join(missing)}")
    terms = engine_terms(
        model, gpu, tensor_parallel or 1, weight_dtype, prefill_chunk_tokens, max_num_seqs, dirs, measurements
    )
    fit = fit_iteration_model(measurements.benchmark, terms, kv_term=kv_term)
    leave_one_out = leave_one_out_errors(measurements.benchmark, terms, fit)
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


def engine_terms(
    model: str | None, gpu: str | None, tensor_parallel: int, weight_dtype: str | None, chunk: int,
    max_num_seqs: int | None, dirs: Sequence[Path], measurements: Any = None,
) -> Any:  # fmt: skip
    """The engine's terms the fit does not fit (:class:`fleetopt.core.calibrate.EngineTerms`): with
    the model and GPU, the prompt attention at τ's rate, the decode KV-read floor and the floors of W
    and τ the planner applies (:func:`fleetopt.core.hardware.iteration_costs`); with ``measurements``
    also refuse a TP vLLM refuses and rows faster than the instance can be."""
    from fleetopt.core.calibrate import EngineTerms
    from fleetopt.io.profiles import load_gpu, load_model

    seqs = max_num_seqs or 1024
    if model is None or gpu is None:
        return EngineTerms(chunk, max_num_seqs=seqs)
    model_profile, gpu_profile = load_model(model, dirs), load_gpu(gpu, dirs)
    if measurements is not None:
        _check_against_hardware(
            measurements, model_profile, gpu_profile, tensor_parallel, weight_dtype, chunk
        )
    return _terms_of(model_profile, gpu_profile, tensor_parallel, weight_dtype, chunk, seqs)


def _terms_of(
    model_profile: Any,
    gpu_profile: Any,
    tensor_parallel: int,
    weight_dtype: str | None,
    chunk: int,
    seqs: int,
) -> Any:
    from fleetopt.core import kv
    from fleetopt.core.calibrate import EngineTerms

    weight_bytes, peak, _ = _weights_and_peak(gpu_profile, weight_dtype)
    bandwidth = tensor_parallel * gpu_profile.memory_bandwidth_bytes_per_s
    kv_bytes = kv.kv_bytes_per_token_per_instance(
        model_profile.kv_bytes_per_token(), model_profile.kv_formula, tensor_parallel, model_profile.kv_heads
    )
    pair_flops = model_profile.attention_flops_per_token_pair()
    active = model_profile.parameter_count_active
    return EngineTerms(
        chunk,
        attention_per_tau=pair_flops / (2.0 * active) if pair_flops and active else 0.0,
        kv_read_s_per_token=kv_bytes / bandwidth,
        base_floor_s=model_profile.parameter_count_total * weight_bytes / bandwidth,
        tau_floor_s=2.0 * active / (tensor_parallel * peak) if peak else 0.0,
        max_num_seqs=seqs,
    )


def _weights_and_peak(gpu: Any, weight_dtype: str | None) -> tuple[float, float | None, str]:
    """(bytes per weight, dense peak FLOP/s of one GPU, dtype): the rows' precision when known, else
    any quantization the engine may have used (the smallest weights and the fastest peak, "any")."""
    from fleetopt.core import kv

    if weight_dtype is not None:
        return kv.DTYPE_BYTES[weight_dtype], gpu.peak_flops_per_s(weight_dtype), weight_dtype
    peaks = [p for p in (gpu.peak_flops_fp8_per_s, gpu.peak_flops_bf16_per_s) if p is not None]
    return min(kv.DTYPE_BYTES.values()), max(peaks, default=None), "any"


def _check_against_hardware(
    measurements: Any, model: Any, gpu: Any, tensor_parallel: int, weight_dtype: str | None, chunk: int
) -> None:
    """Refuse a tensor-parallel size vLLM refuses for the model, and rows faster than the instance
    can physically be (fleetopt.core.calibrate.physical_floors)."""
    from fleetopt.core.calibrate import physical_floors
    from fleetopt.io.measurements import check_physical
    from fleetopt.io.profiles import check_tensor_parallel

    check_tensor_parallel(model, tensor_parallel, "--tp")
    bytes_per_weight, peak, dtype = _weights_and_peak(gpu, weight_dtype)
    floors = physical_floors(
        measurements.benchmark, chunk,
        parameters_active=model.parameter_count_active,
        weight_bytes_active=model.parameter_count_active * bytes_per_weight,
        peak_flops_per_s=None if peak is None else tensor_parallel * peak,
        memory_bandwidth_bytes_per_s=tensor_parallel * gpu.memory_bandwidth_bytes_per_s,
    )  # fmt: skip
    check_physical(measurements, floors, f"{model.name} ({dtype} weights) on {tensor_parallel} × {gpu.name}")


def check_calibration(
    files: Sequence[str],
    *,
    profile: str,
    row_filter: Any = None,
    protocol: str | None = None,
    profiles_dir: Path | None = None,
) -> CalibrationCheck:
    """A serving profile's predicted TTFT and TPOT for every measured row: its W, H, τ, κ, T0 and
    chunk through the engine under the row's protocol (:func:`fleetopt.core.calibrate.simulate_rows`)."""
    import numpy as np

    from fleetopt.core.calibrate import simulate_rows
    from fleetopt.io.measurements import read_measurements
    from fleetopt.io.profiles import resolve_serving

    serving, model, gpu = resolve_serving(profile, profile_search_path(profiles_dir))
    measurements = read_measurements(files, row_filter, protocol=protocol)
    terms = _terms_of(
        model, gpu, serving.tensor_parallel, serving.weight_dtype or model.weight_dtype,
        serving.prefill_chunk_tokens, serving.max_num_seqs or 1024,
    )  # fmt: skip
    theta = np.array(
        [
            serving.iteration_base_s, serving.iteration_per_slot_s, serving.prefill_per_token_s,
            serving.iteration_per_kv_token_s, serving.ttft_overhead_s,
        ]
    )  # fmt: skip
    tpot, ttft = simulate_rows(theta, measurements.benchmark, terms)
    return CalibrationCheck(measurements, serving.name, tpot, ttft)


# -- a plan's calibration interval ---------------------------------------------------------------


def calibration_interval(
    workload: Any, options: Any, routing: Any, fits: tuple[dict, ...], hardware: tuple[Any, ...]
) -> Any:
    """The fleet of ``routing`` re-sized with the fitted parameters of the plan's serving profiles
    (one per entry of ``hardware``, the planner's per-pool profiles) at their lower and upper
    percentiles (``fits``: the profiles' ``fit`` records, whose ``<key>_p10_p90`` give them), as a
    :class:`fleetopt.io.documents.plan.CalibrationInterval`; where those pools cannot meet the SLO,
    the cheapest fleet of any split there (None: no fleet does). None when no profile has
    percentiles."""
    from dataclasses import replace

    from fleetopt.core.calibrate import INTERVAL_PERCENTILES
    from fleetopt.core.planner import Planner
    from fleetopt.io.documents.plan import CalibrationInterval
    from fleetopt.io.measurements import PROFILE_PARAMETERS

    corners: list[list[Any]] = [[], []]
    found = False
    for fit, pool_hardware in zip(fits, hardware, strict=True):
        for side in (0, 1):
            changes = {
                parameter: float(fit[f"{key}_p10_p90"][side]) / factor
                for parameter, key, factor in PROFILE_PARAMETERS
                if isinstance(fit.get(f"{key}_p10_p90"), list) and len(fit[f"{key}_p10_p90"]) == 2
            }
            found = found or bool(changes)
            if "iteration_per_slot_s" in changes:  # the planner needs H > 0
                changes["iteration_per_slot_s"] = max(changes["iteration_per_slot_s"], 1e-9)
            corners[side].append(replace(pool_hardware, **changes))
    if not found:
        return None
    fleets = []
    for sides in corners:
        planner = Planner(workload, tuple(sides), options)
        fleet = planner.fleet(routing, "calibration")
        if not fleet.feasible:  # the pools cannot be re-sized to meet the SLO: the best fleet there
            fleet = planner.plan().best or fleet
        fleets.append(fleet)
    return CalibrationInterval(
        percentiles=[float(p) for p in INTERVAL_PERCENTILES],
        gpus=[int(f.total_gpus) if f.feasible else None for f in fleets],
        cost_per_hour_usd=[float(f.cost_per_hour_usd) if f.feasible else None for f in fleets],
        feasible=[bool(f.feasible) for f in fleets],
    )
