"""`fleetopt profiles list` and `fleetopt profiles show`: the model, GPU and serving profiles."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import typer

from fleetopt.cli.common import FORMAT_OPTION, PROFILES_DIR_OPTION, profiles_dirs
from fleetopt.render.output import OutputFormat

_KIND_HELP = "models, gpus or serving"


def _summary(kind: str, profile: Any, dirs: tuple[Path, ...]) -> dict[str, Any]:
    """One row of ``profiles list``: the figures that tell profiles apart, units in the keys."""
    from fleetopt.errors import FleetoptError
    from fleetopt.io import profiles

    row: dict[str, Any] = {"name": profile.name}
    if kind == "models":
        row.update(
            kv_formula=profile.kv_formula,
            layers=profile.layers,
            parameter_count_total=profile.parameter_count_total,
            parameter_count_active=profile.parameter_count_active,
            weight_dtype=profile.weight_dtype,
            kv_dtype=profile.kv_dtype,
            kv_bytes_per_token=profile.kv_bytes_per_token(),
        )
    elif kind == "gpus":
        row.update(
            memory_bytes=profile.memory_bytes,
            memory_bandwidth_bytes_per_s=profile.memory_bandwidth_bytes_per_s,
            gpu_hour_usd=profile.gpu_hour_usd,
            price_date=profile.price_date,
        )
    else:
        row.update(
            model=profile.model_name,
            gpu=profile.gpu_name,
            gpus_per_instance=profile.tensor_parallel,
            calibration=profile.calibration,
            iteration_base_s=profile.iteration_base_s,
            iteration_per_slot_s=profile.iteration_per_slot_s,
            kv_capacity_method=profile.kv_capacity_method,
        )
        try:
            row["kv_capacity_tokens_per_instance"] = profiles.pool_hardware(
                profile.source_file, dirs
            ).kv_capacity_tokens
        except FleetoptError:
            row["kv_capacity_tokens_per_instance"] = None  # model or GPU missing; `show` says why
    row["source_file"] = profile.source_file
    return row


def _locate(name: str, kind: str | None, dirs: tuple[Path, ...]) -> tuple[str, Any]:
    """Find ``name`` among the profiles of ``kind`` (or of every kind, where it must be unique)."""
    from fleetopt.errors import NotFoundError, ValidationError
    from fleetopt.io import profiles

    if kind is not None:
        return kind, profiles.load_profile(kind, name, dirs)
    if profiles.is_profile_path(name):
        parent = Path(name).parent.name
        if parent in profiles.KINDS:
            return parent, profiles.load_profile(parent, name, dirs)
        raise ValidationError(
            f"cannot tell the kind of profile file {name!r} (its folder is not models/, gpus/ or serving/); "
            f"add --kind {_KIND_HELP.replace(' or ', '|').replace(', ', '|')}"
        )
    kinds = [k for k in profiles.KINDS if name in profiles.profile_names(k, dirs)]
    if len(kinds) > 1:
        raise ValidationError(f"{name!r} names profiles of several kinds ({', '.join(kinds)}); add --kind")
    if not kinds:
        known = "; ".join(
            f"{k}: {', '.join(profiles.profile_names(k, dirs)) or '(none)'}" for k in profiles.KINDS
        )
        raise NotFoundError(f"no profile named {name!r}; known {known}")
    return kinds[0], profiles.load_profile(kinds[0], name, dirs)


def register(app: typer.Typer) -> None:
    """Add ``fleetopt profiles list`` and ``fleetopt profiles show`` to ``app``."""
    group = typer.Typer(
        name="profiles",
        help="List and show the model, GPU and serving profiles (bundled and --profiles-dir).",
        no_args_is_help=True,
        rich_markup_mode=None,
    )

    @group.command("list")
    def list_command(
        kind: str | None = typer.Option(None, "--kind", "-k", help=f"Only this kind: {_KIND_HELP}."),
        profiles_dir: Path | None = PROFILES_DIR_OPTION,
        fmt: OutputFormat = FORMAT_OPTION,
    ) -> None:
        """List the profiles on the search path (your --profiles-dir first, then the bundled ones)."""
        from fleetopt.io import profiles
        from fleetopt.render.output import emit
        from fleetopt.render.profiles import draw_profile_list

        dirs = profiles_dirs(profiles_dir)
        kinds = profiles.KINDS if kind is None else (kind,)
        data = {k: [_summary(k, p, dirs) for p in profiles.list_profiles(k, dirs)] for k in kinds}
        emit(data, fmt, draw_profile_list)

    @group.command("show")
    def show_command(
        name: str = typer.Argument(
            ..., help="Profile name (unique across kinds, or give --kind) or YAML path."
        ),
        kind: str | None = typer.Option(None, "--kind", "-k", help=f"The profile's kind: {_KIND_HELP}."),
        profiles_dir: Path | None = PROFILES_DIR_OPTION,
        fmt: OutputFormat = FORMAT_OPTION,
    ) -> None:
        """Show one profile with every field in fleetopt's internal units (bytes, seconds, tokens)."""
        from fleetopt.io import profiles
        from fleetopt.render.output import emit
        from fleetopt.render.profiles import draw_profile

        dirs = profiles_dirs(profiles_dir)
        found_kind, profile = _locate(name, kind, dirs)
        data: dict[str, Any] = {"kind": found_kind, **dataclasses.asdict(profile)}
        if found_kind == "models":
            data["kv_bytes_per_token"] = profile.kv_bytes_per_token()
        elif found_kind == "serving":
            hardware = profiles.pool_hardware(profile.source_file, dirs)
            data["kv_capacity_tokens_per_instance"] = hardware.kv_capacity_tokens
            data["gpu_hour_usd"] = hardware.gpu_hour_usd
            data["instance_hour_usd"] = hardware.instance_hour_usd
        emit(data, fmt, draw_profile)

    app.add_typer(group)
