"""``fleetopt plan --hardware``: the catalog of serving profiles a plan chooses among, per pool.

``auto`` is every serving profile of the plan's model on the profile path (``fleetopt profiles
list``), the ``--serving`` profile first; a comma list names them. ``--price TYPE=$/h`` re-prices
a GPU type; ``--max-gpus TYPE=N`` caps its GPUs (:func:`fleetopt.core.hardware_search.apply_inventory`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from fleetopt.core.hardware_search import priced
from fleetopt.core.service import PoolHardware
from fleetopt.errors import ValidationError, excerpt

#: ``--hardware auto``: every serving profile of the plan's model.
AUTO = "auto"


def hardware_catalog(
    hardware: str | Sequence[str],
    serving: str,
    dirs: Sequence[Path],
    prices_usd_per_gpu_hour: Mapping[str, float] | None = None,
) -> tuple[PoolHardware, ...]:
    """The serving profiles the plan chooses among: ``auto`` (every profile of ``serving``'s model,
    ``serving`` first, then by name) or the names given (all of one model, none twice), each at the
    price given for its GPU type."""
    from fleetopt.io.profiles import list_profiles, pool_hardware

    prices = dict(prices_usd_per_gpu_hour or {})
    names = [hardware] if isinstance(hardware, str) else list(hardware)
    names = [n.strip() for part in names for n in part.split(",") if n.strip()]
    if not names:
        raise ValidationError("--hardware: give auto or a comma-separated list of serving profiles")
    if names == [AUTO]:
        reference = pool_hardware(serving, dirs)
        others = sorted(
            p.name for p in list_profiles("serving", dirs) if p.model_name == reference.model_name
        )
        names = [serving] + [n for n in others if n != reference.serving_name]
    elif AUTO in names:
        raise ValidationError("--hardware: auto stands alone (it means every profile of the plan's model)")
    catalog = tuple(pool_hardware(name, dirs) for name in names)
    model = catalog[0].model_name
    for name, h in zip(names, catalog, strict=True):
        if h.model_name != model:
            raise ValidationError(
                f"--hardware: serving profile {excerpt(name)} runs model {h.model_name!r}, not "
                f"{model!r} like {catalog[0].serving_name!r}: every pool of a plan serves one model"
            )
    seen = [h.serving_name for h in catalog]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if twice:
        raise ValidationError(f"--hardware: {', '.join(twice)} listed more than once")
    check_prices(prices, catalog)
    return tuple(priced(h, prices) for h in catalog)


def _check_types(flag: str, given: Mapping[str, float], catalog: Sequence[PoolHardware]) -> None:
    gpus = {h.gpu_name for h in catalog}
    unknown = sorted(set(given) - gpus)
    if unknown:
        raise ValidationError(
            f"{flag}: GPU type {excerpt(unknown[0])} is not among the plan's profiles (GPU types: "
            f"{', '.join(sorted(gpus))})"
        )


def check_prices(prices: Mapping[str, float], catalog: Sequence[PoolHardware]) -> None:
    """Refuse a ``--price`` that is not a positive number or names a GPU type no profile uses."""
    for gpu, price in prices.items():
        if (
            isinstance(price, bool)
            or not isinstance(price, int | float)
            or not (price > 0 and math.isfinite(price))
        ):
            raise ValidationError(f"--price: {gpu}={price!r} $/GPU-hour must be a positive number")
    _check_types("--price", prices, catalog)


def check_inventory(max_gpus: Mapping[str, int], catalog: Sequence[PoolHardware]) -> None:
    """Refuse a ``--max-gpus`` that is not a whole number ≥ 0 or names a GPU type not in the catalog."""
    for gpu, count in max_gpus.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError(f"--max-gpus: {gpu}={count!r} must be a whole number of GPUs ≥ 0")
    _check_types("--max-gpus", max_gpus, catalog)


def parse_type_values(items: Sequence[str] | None, flag: str, *, integer: bool) -> dict[str, float]:
    """``TYPE=VALUE`` pairs (``--price h100-80gb=2.5``, ``--max-gpus b200=64``) as a dict; a value
    must be a positive number (a whole number ≥ 0 for ``integer``)."""
    values: dict[str, float] = {}
    for item in items or ():
        gpu, sep, text = item.partition("=")
        gpu = gpu.strip()
        if not sep or not gpu:
            raise ValidationError(f"{flag}: {excerpt(item)} must be TYPE=VALUE (e.g. {flag} h100-80gb=2.5)")
        try:
            value = int(text) if integer else float(text.strip().lstrip("$"))
        except ValueError:
            value = math.nan
        good = (value >= 0) if integer else (value > 0 and math.isfinite(value))
        if not good:
            allowed = "a whole number of GPUs ≥ 0" if integer else "a positive number of $/GPU-hour"
            raise ValidationError(f"{flag}: {gpu}={excerpt(text)} is not allowed; it must be {allowed}")
        if gpu in values:
            raise ValidationError(f"{flag}: GPU type {excerpt(gpu)} given twice")
        values[gpu] = value
    return values
