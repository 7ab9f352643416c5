"""Option values without pydantic: a light coercion for the plain values fleetopt's commands take.

Recent typer (≥ 0.2x) converts every option value through a pydantic ``TypeAdapter``: importing
pydantic and building the adapters costs ~50–90 ms of CPU per command, more than the planning
itself. Our options are plain strings, integers, floats, enums and paths, whose conversion needs
no schema. :func:`lighten_params` gives each such parameter a coercion that converts the
*unambiguous* spellings itself (``"500ms"`` as a string, ``"1000"`` as an int, ``"2.5e3"`` as a
float, an enum's exact value, a path) and hands everything else — other spellings, values out of
a ``min``/``max`` range, lists — to typer's own coercion, so every accepted value and every error
message is exactly typer's. On a typer without these internals (older versions convert with
click's types and never import pydantic) it does nothing.
"""

from __future__ import annotations

import enum
import math
import re
from pathlib import Path
from typing import Any

_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_UNCHANGED = object()


def _fast_value(param: Any, value: Any, ctx: Any) -> Any:
    """``value`` converted for ``param`` when the conversion is unambiguous, else ``_UNCHANGED``."""
    descriptor = param.type_descriptor
    annotation = descriptor.annotation
    info = descriptor.parameter_info
    if getattr(info, "parser", None) is not None or descriptor.file_annotation is not None:
        return _UNCHANGED
    if annotation is str:
        return value if isinstance(value, str) else _UNCHANGED
    if annotation is int or annotation is float:
        if isinstance(value, str) and value.isascii():
            pattern = _INT if annotation is int else _FLOAT
            if not pattern.fullmatch(value):
                return _UNCHANGED
            number = annotation(value)
        elif type(value) is annotation:
            number = value
        else:
            return _UNCHANGED
        if annotation is float and not math.isfinite(number):
            return _UNCHANGED
        low, high = info.min, info.max
        if (low is not None and not number >= low) or (high is not None and not number <= high):
            return _UNCHANGED  # typer words the range error (or clamps)
        return number
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        if isinstance(value, annotation):
            return value
        if isinstance(value, str) and getattr(ctx, "token_normalize_func", None) is None:
            for member in annotation:
                if str(member.value) == value:
                    return member
        return _UNCHANGED
    if annotation is Path and isinstance(value, str) and value:
        from typer._param_types import coerce_cli_path

        path_type = info.path_type or Path
        if path_type is not Path:
            return _UNCHANGED
        return coerce_cli_path(Path(value), info, path_type=path_type, param=param, ctx=ctx)
    return _UNCHANGED


class _LightCoercion:
    """A typer runtime parameter: the fast conversion, else typer's own (built on first need)."""

    def __init__(self, param: Any) -> None:
        self._param = param
        self._full: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multiple = param.multiple or param.nargs == -1
        if value is None:
            return () if multiple else None
        if not multiple:
            fast = _fast_value(param, value, ctx)
            if fast is not _UNCHANGED:
                return fast
        if self._full is None:
            from typer._coercion import build_runtime_param

            self._full = build_runtime_param(param.type_descriptor)
        return self._full.coerce(value, param=param, ctx=ctx)


def lighten_param(param: Any) -> None:
    """Give one typer parameter the light coercion (no-op for other parameters, or if done)."""
    if hasattr(param, "type_descriptor") and getattr(param, "_runtime_param", _UNCHANGED) is None:
        param._runtime_param = _LightCoercion(param)


def lighten_params(command: Any) -> None:
    """Give every parameter of ``command`` and of its subcommands the light coercion.

    Wraps the command's ``get_params`` so the parameters made per invocation (``--help``) get it too.
    """
    if not hasattr(command, "get_params") or getattr(command, "_fleetopt_light", False):
        return
    original = command.get_params

    def get_params(ctx: Any) -> Any:
        params = original(ctx)
        for param in params:
            lighten_param(param)
        return params

    command.get_params = get_params
    command._fleetopt_light = True
    for sub in getattr(command, "commands", {}).values():
        lighten_params(sub)
