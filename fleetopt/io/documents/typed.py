"""Typed documents: an immutable dataclass (:class:`Document`, declared with :func:`document`) is
the one definition of a document's fields, and from it come the writer (:func:`to_document`), the
reader (:func:`from_document`) and the published JSON Schema, draft 2020-12 (:func:`json_schema`).

A field's Python type says what its value is (``int``, ``float``, ``str``, ``bool``,
``Literal[...]``, ``X | None``, ``list[X]``, ``tuple[X, Y]``, ``dict[str, X]``, a nested
dataclass, ``Any``); :func:`spec` in the field's metadata adds the rest: bounds, what older files
may lack (``since``), keys written only when they have a value (``omit_if_none``) or only when
another field has a given value (``present_if``). Descriptions come from the ``Attributes:``
section of each dataclass's docstring. Dataclasses of core (``PoolHardware``, ``RateProfile``, …)
can be fields too: their own defaults are what a file written before the field existed gets, and
a :data:`CONSTRAINTS` entry bounds their values, so the document follows core's dataclass.

The reader checks exactly what the schema says, no more: a document the schema accepts reads, and
one it rejects fails with one :class:`~fleetopt.errors.ValidationError` naming the file, the
field, the value and what is allowed (unknown keys included). What the schema cannot say (the
pools of a plan match its routing, GPUs add up) is checked by the reader of each document.
Non-finite numbers are written as null (JSON has none) and refused on read.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import re
import sys
import types
import typing
from typing import Any, Literal

from fleetopt.errors import ValidationError, excerpt

#: The JSON Schema dialect every published schema declares.
DIALECT = "https://json-schema.org/draft/2020-12/schema"

_MISSING: Any = dataclasses.MISSING


def spec(
    *,
    minimum: float | None = None,
    exclusive_minimum: float | None = None,
    maximum: float | None = None,
    min_items: int | None = None,
    non_empty: bool = False,
    since: Any = _MISSING,
    omit_if_none: bool = False,
    present_if: tuple[str, Any] | None = None,
    allowed: str | None = None,
    keys: tuple[str, ...] | None = None,
    enum: tuple[Any, ...] | None = None,
    pattern: str | None = None,
    format: str | None = None,
    nullable: bool = False,
    description: str | None = None,
) -> dict[str, Any]:
    """A field's metadata (``dataclasses.field(metadata=spec(...))``).

    Bounds (``minimum``, ``exclusive_minimum``, ``maximum``, ``enum``, ``pattern``) apply to the
    field's numbers or strings, inside lists and mappings too. ``min_items``: of a list;
    ``non_empty``: a string of at least one character. ``since``: the value a document written
    before this field existed gets (the field is then optional); ``omit_if_none``: the key is left
    out when the value is None (and may not be null); ``present_if=(name, value)``: the key is
    written exactly when field ``name`` has ``value`` (else it must be absent and reads as None).
    ``allowed``: the words for what is allowed, where the generated ones would say too little.
    ``keys``: the mapping's allowed keys, in order. ``format``: a JSON Schema format annotation.
    ``nullable``: null is allowed too (for a core dataclass's field that can be NaN, written null).
    ``description``: the field's description in the schema, where its class's docstring has none.
    """
    return {
        "fleetopt": {
            "minimum": minimum, "exclusive_minimum": exclusive_minimum, "maximum": maximum,
            "min_items": min_items, "non_empty": non_empty, "since": since, "omit_if_none": omit_if_none,
            "present_if": present_if, "allowed": allowed, "keys": keys, "enum": enum, "pattern": pattern,
            "format": format, "nullable": nullable, "description": description,
        }
    }  # fmt: skip


def field(*, default: Any = _MISSING, **kwargs: Any) -> Any:
    """``dataclasses.field(default=default, metadata=spec(**kwargs))``: a document field with its spec."""
    return dataclasses.field(default=default, metadata=spec(**kwargs))


#: Bounds of the fields of core dataclasses that documents carry (core knows nothing of documents).
CONSTRAINTS: dict[str, dict[str, dict[str, Any]]] = {}


def constrain(cls: type | str, **fields: dict[str, Any]) -> None:
    """Bound the fields of a core dataclass wherever a document carries it: ``cls``, or its
    ``"module.Class"`` name (so that its module is imported only when a document has one)."""
    CONSTRAINTS[cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}"] = fields


class Document:
    """The base of every document dataclass (declare one with :func:`document`): immutable, with one
    ``__init__``, ``__repr__`` and ``__eq__`` for all of them, where ``@dataclass(frozen=True)``
    would generate and compile five methods per class — ~0.8 ms each of every command's start-up."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any):
        cls = type(self)
        names, defaults = _init_spec(cls)
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, {len(args)} were given")
        values = dict(zip(names, args, strict=False))  # the leading fields, given by position
        for name, value in kwargs.items():
            if name in values or name not in defaults and name not in names:
                why = "multiple values for" if name in values else "an unexpected keyword"
                raise TypeError(f"{cls.__name__}() got {why} argument {name!r}")
            values[name] = value
        for name in names:
            if name in values:
                value = values[name]
            elif name in defaults:
                value = defaults[name]
            else:
                raise TypeError(f"{cls.__name__}() is missing the argument {name!r}")
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        names, _ = _init_spec(type(self))
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        names, _ = _init_spec(type(self))
        return all(getattr(self, n) == getattr(other, n) for n in names)

    __hash__ = None  # type: ignore[assignment]  (documents hold lists and mappings)


_INIT_SPECS: dict[type, tuple[tuple[str, ...], dict[str, Any]]] = {}


def _init_spec(cls: type) -> tuple[tuple[str, ...], dict[str, Any]]:
    """(field names in order, {name: default}) of a document dataclass."""
    found = _INIT_SPECS.get(cls)
    if found is None:
        fields = dataclasses.fields(cls)
        defaults = {f.name: f.default for f in fields if f.default is not _MISSING}
        found = _INIT_SPECS[cls] = (tuple(f.name for f in fields), defaults)
    return found


def document(cls: type) -> type:
    """Declare a document dataclass: ``@document class X(Document): a: int = field(...)`` — a
    dataclass whose methods come from :class:`Document`."""
    return dataclasses.dataclass(init=False, repr=False, eq=False)(cls)


# ------------------------------------------------------------------------------------------ codecs


class _Fail(Exception):
    """A value a codec refuses: where it is, what it is, what is allowed (or that it is missing)."""

    def __init__(self, path: str, value: Any, allowed: str, missing: bool = False, message: str = ""):
        super().__init__(path)
        self.path, self.value, self.allowed = path, value, allowed
        self.missing, self.message = missing, message


def finite_or_none(value: float | None) -> float | None:
    """A figure for a document: None when there is none or it is not finite (never NaN or ∞)."""
    return value if value is not None and math.isfinite(value) else None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Codec:
    """Encodes a Python value to plain data, decodes plain data (checked) and describes both."""

    def encode(self, value: Any) -> Any:
        return value

    def decode(self, value: Any, path: str) -> Any:
        raise NotImplementedError

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def allowed(self) -> str:
        raise NotImplementedError

    nullable = False


def _bounds_text(minimum: Any, exclusive: Any, maximum: Any) -> str:
    if exclusive is not None and maximum is not None:
        return f" in ({exclusive:g}, {maximum:g}]"
    if minimum is not None and maximum is not None:
        return f" in [{minimum:g}, {maximum:g}]"
    if exclusive is not None:
        return " > 0" if exclusive == 0 else f" > {exclusive:g}"
    if minimum is not None:
        return f" ≥ {minimum:g}"
    if maximum is not None:
        return f" ≤ {maximum:g}"
    return ""


class _Number(_Codec):
    def __init__(self, integer: bool, info: dict[str, Any]):
        self.integer = integer
        self.minimum, self.maximum = info["minimum"], info["maximum"]
        self.exclusive = info["exclusive_minimum"]

    def encode(self, value: Any) -> Any:
        kind = type(value)
        if kind is int or kind is bool:
            return value
        if kind is not float:
            try:  # numpy integers stay integers, as the JSON writer would print them
                return operator.index(value)
            except TypeError:
                pass
        if self.integer:
            return int(value)
        value = float(value)
        return value if math.isfinite(value) else None

    def _in_bounds(self, value: float) -> bool:
        return not (
            (self.minimum is not None and value < self.minimum)
            or (self.exclusive is not None and value <= self.exclusive)
            or (self.maximum is not None and value > self.maximum)
        )

    def decode(self, value: Any, path: str) -> Any:
        kind = type(value)
        if kind is bool or not (kind is int or kind is float or isinstance(value, (int, float))):
            raise _Fail(path, value, self.allowed())
        if self.integer:
            if kind is not int and not (math.isfinite(value) and float(value).is_integer()):
                raise _Fail(path, value, self.allowed())
            value = int(value)
        elif not math.isfinite(value):
            raise _Fail(path, value, self.allowed())
        elif kind is not int:  # an integer stays one, so a document reads and writes back the same
            value = float(value)
        if not self._in_bounds(value):
            raise _Fail(path, value, self.allowed())
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.exclusive is not None:
            out["exclusiveMinimum"] = self.exclusive
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out

    def allowed(self) -> str:
        bounds = _bounds_text(self.minimum, self.exclusive, self.maximum)
        if self.integer:
            return "an integer" + bounds
        if bounds == " > 0":
            return "a positive finite number"
        return ("a number" if bounds.startswith(" in") else "a finite number") + bounds


class _String(_Codec):
    def __init__(self, info: dict[str, Any]):
        self.non_empty, self.pattern, self.format = info["non_empty"], info["pattern"], info["format"]
        self._match = re.compile(self.pattern).search if self.pattern else None

    def decode(self, value: Any, path: str) -> Any:
        if (
            not isinstance(value, str)
            or (self.non_empty and not value)
            or (self._match is not None and not self._match(value))
        ):
            raise _Fail(path, value, self.allowed())
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.non_empty:
            out["minLength"] = 1
        if self.pattern:
            out["pattern"] = self.pattern
        if self.format:
            out["format"] = self.format
        return out

    def allowed(self) -> str:
        if self.pattern:
            return f"a string matching {self.pattern}"
        return "a non-empty string" if self.non_empty else "a string"


class _Bool(_Codec):
    def decode(self, value: Any, path: str) -> Any:
        if type(value) is not bool:
            raise _Fail(path, value, self.allowed())
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "boolean"}

    def allowed(self) -> str:
        return "true or false"


class _Enum(_Codec):
    def __init__(self, values: tuple[Any, ...]):
        self.values = tuple(values)

    def decode(self, value: Any, path: str) -> Any:
        # as JSON Schema's enum: 1.0 is 1, but true is not 1
        if not any(value == v and isinstance(value, bool) == isinstance(v, bool) for v in self.values):
            raise _Fail(path, value, self.allowed())
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"const": self.values[0]} if len(self.values) == 1 else {"enum": list(self.values)}

    def allowed(self) -> str:
        return " or ".join(str(v) for v in self.values)


class _Optional(_Codec):
    nullable = True

    def __init__(self, inner: _Codec):
        self.inner = inner

    def encode(self, value: Any) -> Any:
        return None if value is None else self.inner.encode(value)

    def decode(self, value: Any, path: str) -> Any:
        return None if value is None else self.inner.decode(value, path)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        inner = self.inner.schema(defs)
        if isinstance(inner.get("type"), str) and "$ref" not in inner:
            return {**inner, "type": [inner["type"], "null"]}
        if "enum" in inner:
            return {"enum": [*inner["enum"], None]}
        if "const" in inner:
            return {"enum": [inner["const"], None]}
        return {"anyOf": [inner, {"type": "null"}]}

    def allowed(self) -> str:
        return f"{self.inner.allowed()}, or null"


_PLURALS = {"an integer": "integers", "a finite number": "numbers", "a string": "strings"}


class _List(_Codec):
    def __init__(self, item: _Codec, min_items: int | None, as_tuple: bool):
        self.item, self.min_items, self.as_tuple = item, min_items, as_tuple

    def encode(self, value: Any) -> Any:
        encode = self.item.encode
        return [encode(v) for v in value]

    def decode(self, value: Any, path: str) -> Any:
        if not isinstance(value, list) or (self.min_items is not None and len(value) < self.min_items):
            raise _Fail(path, value, self.allowed())
        decode = self.item.decode
        out = [decode(v, f"{path}[{k}]") for k, v in enumerate(value)]
        return tuple(out) if self.as_tuple else out

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": self.item.schema(defs)}
        if self.min_items:
            out["minItems"] = self.min_items
        return out

    def allowed(self) -> str:
        item = self.item.allowed()
        size = "a non-empty list" if self.min_items == 1 else "a list"
        if self.min_items and self.min_items > 1:
            size = f"a list of at least {self.min_items}"
        if item in _PLURALS:
            return f"{size} of {_PLURALS[item]}"
        return f"{size} (each {item})"


class _Tuple(_Codec):
    """A fixed-length array, e.g. ``tuple[float, float]`` (read back as a tuple)."""

    def __init__(self, items: tuple[_Codec, ...]):
        self.items = items

    def encode(self, value: Any) -> Any:
        return [codec.encode(v) for codec, v in zip(self.items, value, strict=True)]

    def decode(self, value: Any, path: str) -> Any:
        if not isinstance(value, list) or len(value) != len(self.items):
            raise _Fail(path, value, self.allowed())
        pairs = enumerate(zip(self.items, value, strict=True))
        return tuple(codec.decode(v, f"{path}[{k}]") for k, (codec, v) in pairs)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        n = len(self.items)
        return {"type": "array", "prefixItems": [c.schema(defs) for c in self.items], "items": False,
                "minItems": n}  # fmt: skip

    def allowed(self) -> str:
        return "[" + ", ".join(c.allowed() for c in self.items) + "]"


class _Map(_Codec):
    def __init__(self, value: _Codec, keys: tuple[str, ...] | None):
        self.value, self.keys = value, keys

    def encode(self, value: Any) -> Any:
        encode = self.value.encode
        return {str(k): encode(v) for k, v in value.items()}

    def decode(self, value: Any, path: str) -> Any:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise _Fail(path, value, self.allowed())
        if self.keys is not None:
            for key in value:
                if key not in self.keys:
                    raise _Fail(path, value, "", message=_unknown(path, key, value[key], self.keys))
        decode = self.value.decode
        return {k: decode(v, _join(path, k)) for k, v in value.items()}

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "additionalProperties": self.value.schema(defs)}
        if self.keys is not None:
            out["propertyNames"] = {"enum": list(self.keys)}
        return out

    def allowed(self) -> str:
        return "a mapping" + ("" if self.keys is None else f" with keys among {', '.join(self.keys)}")


class _Anything(_Codec):
    def decode(self, value: Any, path: str) -> Any:
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {}

    def allowed(self) -> str:
        return "any value"


class _AnyMapping(_Anything):
    def decode(self, value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _Fail(path, value, self.allowed())
        return value

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object"}

    def allowed(self) -> str:
        return "a mapping"


def _unknown(path: str, key: str, value: Any, known: tuple[str, ...]) -> str:
    """An unknown key: where it is, its value, and the keys allowed there."""
    where = path or "the document"
    return f"{_join(path, key)} = {excerpt(value)} is not a known field; {where} has only {', '.join(known)}"


class _Field:
    """One field of a document dataclass, compiled: its codec and how a missing key reads."""

    __slots__ = ("name", "codec", "required", "default", "omit_if_none", "present_if", "since", "allowed",
                 "description")  # fmt: skip

    def __init__(self, name, codec, required, default, omit_if_none, present_if, since, allowed, description):
        self.name, self.codec, self.required, self.default = name, codec, required, default
        self.omit_if_none, self.present_if, self.since = omit_if_none, present_if, since
        self.allowed = allowed  # the words for what is allowed, where the codec's say too little
        self.description = description

    def allowed_text(self) -> str:
        return self.allowed or self.codec.allowed()


class _Object(_Codec):
    """A dataclass: its fields in order, each with its codec."""

    def __init__(self, cls: type):
        self.cls = cls
        self.fields: list[_Field] = []  # filled by _compile (a type may contain itself)
        self.order: tuple[str, ...] = ()
        self.names: frozenset[str] = frozenset()

    def encode(self, value: Any) -> Any:
        out: dict[str, Any] = {}
        for f in self.fields:
            item = getattr(value, f.name)
            if item is None and f.omit_if_none:
                continue
            if f.present_if is not None and getattr(value, f.present_if[0]) != f.present_if[1]:
                continue
            out[f.name] = None if item is None else f.codec.encode(item)
        return out

    def decode(self, value: Any, path: str) -> Any:
        if not isinstance(value, dict):
            raise _Fail(path, value, self.allowed())
        names = self.names
        for key in value:
            if key not in names:
                raise _Fail(path, value, "", message=_unknown(path, str(key), value[key], self.order))
        values: dict[str, Any] = {}
        for f in self.fields:
            where = _join(path, f.name)
            if f.present_if is not None:
                other, wanted = f.present_if
                if values.get(other) != wanted:
                    if f.name in value:
                        message = f"{where} is only written when {_join(path, other)} is {json.dumps(wanted)}"
                        raise _Fail(where, value[f.name], "", message=message)
                    values[f.name] = None
                    continue
            if f.name not in value:
                if f.required:
                    raise _Fail(where, None, f.allowed_text(), missing=True)
                values[f.name] = f.default() if callable(f.default) else f.default
                continue
            item = value[f.name]
            if item is None and not f.codec.nullable:
                raise _Fail(where, item, f.allowed_text())
            try:
                values[f.name] = f.codec.decode(item, where)
            except _Fail as fail:
                if f.allowed is not None and fail.path == where and not fail.message:
                    fail.allowed = f.allowed
                raise
        return self.cls(**values)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        name = self.cls.__name__
        if name not in defs:
            defs[name] = {}  # a placeholder first: a type may contain itself
            defs[name] = self.object_schema(defs)
        return {"$ref": f"#/$defs/{name}"}

    def object_schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        conditional: dict[tuple[str, Any], list[str]] = {}
        described = _docstring_attributes(self.cls)
        for f in self.fields:
            prop = f.codec.schema(defs)
            text = described.get(f.name) or f.description
            if text:
                prop = {"description": _plain(text), **prop}
            if f.since is not _MISSING:
                prop["default"] = _json_default(f.since)
            properties[f.name] = prop
            if f.present_if is not None:
                conditional.setdefault(f.present_if, []).append(f.name)
            elif f.required:
                required.append(f.name)
        out: dict[str, Any] = {"type": "object"}
        doc = _class_description(self.cls)
        if doc:
            out["description"] = doc
        out["properties"] = properties
        if required:
            out["required"] = required
        out["additionalProperties"] = False
        if conditional:
            out["allOf"] = [
                {
                    "if": {"properties": {other: {"const": wanted}}, "required": [other]},
                    "then": {"required": [n for n in names if self._field(n).required]},
                    "else": {"properties": {n: False for n in names}},
                }
                for (other, wanted), names in conditional.items()
            ]
        return out

    def _field(self, name: str) -> _Field:
        return next(f for f in self.fields if f.name == name)

    def allowed(self) -> str:
        names = self.order or tuple(f.name for f in dataclasses.fields(self.cls))
        return "a mapping of " + ", ".join(names[:3]) + (", …" if len(names) > 3 else "")


def _json_default(value: Any) -> Any:
    if callable(value):  # a factory (a list, a dataclass)
        value = value()
    if dataclasses.is_dataclass(value):
        return to_document(value)
    return list(value) if isinstance(value, tuple) else value


# ------------------------------------------------------------------------------------ compiling


_COMPILED: dict[Any, _Object] = {}


def _docstring_attributes(cls: type) -> dict[str, str]:
    """``name: text`` of the class docstring's ``Attributes:`` section (``a, b: text`` names two)."""
    doc = cls.__doc__ or ""
    lines = doc.expandtabs().splitlines()
    out: dict[str, str] = {}
    inside, indent, current = False, None, None
    for line in lines:
        stripped = line.strip()
        if stripped == "Attributes:":
            inside, indent, current = True, None, None
            continue
        if not inside:
            continue
        if not stripped:
            if current is not None:
                continue
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        if depth < indent:
            break
        match = re.match(r"^([\w ,]+?):\s+(.*)$", stripped) if depth == indent else None
        if match:
            current = [n.strip() for n in match.group(1).split(",")]
            for name in current:
                out[name] = match.group(2)
        elif current is not None:
            for name in current:
                out[name] += " " + stripped
    return out


def _plain(text: str) -> str:
    """Docstring markup as plain Markdown: ````x```` → ```x```, ``:class:`~a.b.C``` → ```C```."""
    text = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?([\w]+)`", r"`\1`", text)
    return " ".join(text.replace("``", "`").split())


def _class_description(cls: type) -> str | None:
    doc = (cls.__doc__ or "").strip()
    if not doc or doc.startswith(cls.__name__ + "("):  # dataclass's generated signature
        return None
    return _plain(doc.split("\n\n", 1)[0])


def _codec(tp: Any, info: dict[str, Any]) -> _Codec:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unions other than X | None are not supported: {tp}")
        return _Optional(_codec(inner[0], info))
    if info.get("enum") is not None:
        return _Enum(info["enum"])
    if origin is Literal:
        return _Enum(args)
    if tp is bool:
        return _Bool()
    if tp is int or tp is float:
        return _Number(tp is int, info)
    if tp is str:
        return _String(info)
    if tp is Any:
        return _Anything()
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return _List(_codec(args[0], info), info.get("min_items"), origin is tuple)
    if origin is tuple:
        return _Tuple(tuple(_codec(a, info) for a in args))
    if origin is dict:
        if args[1] is Any:
            return _AnyMapping()
        return _Map(_codec(args[1], info), info.get("keys"))
    if dataclasses.is_dataclass(tp):
        return _compile(tp)
    raise TypeError(f"no document codec for {tp!r}")


_NO_INFO = spec()["fleetopt"]
_ANNOTATIONS: dict[tuple[str, str], Any] = {}


def _field_type(cls: type, item: dataclasses.Field) -> Any:
    """A field's type; a string annotation (``from __future__ import annotations``) is evaluated
    in its module, once per distinct text (``typing.get_type_hints`` costs ~0.4 ms a class). A name
    the module provides lazily (PEP 562 ``__getattr__``: a type whose module a document imports only
    when it holds one) gives a :class:`_Deferred` codec instead: ``"X | None"`` → optional X."""
    if not isinstance(item.type, str):
        return item.type
    key = (cls.__module__, item.type)
    found = _ANNOTATIONS.get(key)
    if found is None:
        module = sys.modules[cls.__module__]
        try:
            found = eval(item.type, vars(module))  # noqa: S307 (an annotation of our own code)
        except NameError:
            text, optional = item.type, item.type.replace(" ", "").endswith("|None")
            name = text.rsplit("|", 1)[0].strip() if optional else text.strip()
            found = _Deferred(module, name)
        _ANNOTATIONS[key] = found
    return found


class _Deferred:
    """A dataclass type named by a lazily imported name of ``module``: resolved (and its module
    imported) the first time a value of it is written or read, or the schema is made."""

    def __init__(self, module: Any, name: str):
        self.module, self.name = module, name

    def resolve(self) -> type:
        return getattr(self.module, self.name)


class _DeferredCodec(_Codec):
    def __init__(self, deferred: _Deferred, info: dict[str, Any]):
        self.deferred, self.info, self._codec = deferred, info, None

    @property
    def codec(self) -> _Codec:
        if self._codec is None:
            self._codec = _codec(self.deferred.resolve(), self.info)
        return self._codec

    def encode(self, value: Any) -> Any:
        return self.codec.encode(value)

    def decode(self, value: Any, path: str) -> Any:
        return self.codec.decode(value, path)

    def schema(self, defs: dict[str, Any]) -> dict[str, Any]:
        return self.codec.schema(defs)

    def allowed(self) -> str:
        return self.codec.allowed()


def _compile(cls: type) -> _Object:
    """The codec of dataclass ``cls`` (made once, on first use)."""
    found = _COMPILED.get(cls)
    if found is not None:
        return found
    codec = _Object(cls)
    _COMPILED[cls] = codec
    external = CONSTRAINTS.get(f"{cls.__module__}.{cls.__qualname__}", {})
    fields = []
    for item in dataclasses.fields(cls):
        own = item.metadata.get("fleetopt")
        info = own or external.get(item.name, {}).get("fleetopt") or _NO_INFO
        since = info["since"]
        if own is None and since is _MISSING:  # a core dataclass: its own default is what older files get
            if item.default is not _MISSING:
                since = item.default
            elif item.default_factory is not _MISSING:
                since = item.default_factory
        omit = info["omit_if_none"]
        present_if = info["present_if"]
        required = since is _MISSING and not omit  # (when present_if's condition holds)
        default = None if since is _MISSING else since
        kind = _field_type(cls, item)
        if isinstance(kind, _Deferred):
            optional = item.type.replace(" ", "").endswith("|None")
            field_codec = _DeferredCodec(kind, info)
            field_codec = _Optional(field_codec) if optional else field_codec
        else:
            field_codec = _codec(kind, info)
        if info["nullable"] and not field_codec.nullable:
            field_codec = _Optional(field_codec)
        fields.append(
            _Field(
                item.name,
                field_codec,
                required,
                default,
                omit,
                present_if,
                since,
                info["allowed"],
                info["description"],
            )  # fmt: skip
        )
    codec.fields = fields
    codec.order = tuple(f.name for f in fields)
    codec.names = frozenset(codec.order)
    return codec


# ------------------------------------------------------------------------------------------ API


def to_document(value: Any) -> dict[str, Any]:
    """The plain data of a document dataclass (dicts, lists, str, int, float, bool, None), keys in
    field order; non-finite numbers become None."""
    return _compile(type(value)).encode(value)


def from_document(cls: type, data: Any, source: str, path: str = "") -> Any:
    """``data`` read as a ``cls`` — checked against exactly what :func:`json_schema` publishes.

    Raises ValidationError: ``{source}: {field} = {value} is invalid; expected {allowed}``,
    ``{source}: {field} is missing (the file may be truncated); expected {allowed}``, or an unknown
    field with the fields allowed there.
    """
    try:
        return _compile(cls).decode(data, path)
    except _Fail as fail:
        raise document_error(source, fail) from None


def document_error(source: str, fail: _Fail) -> ValidationError:
    if fail.message:
        return ValidationError(f"{source}: {fail.message}")
    if fail.missing:
        return ValidationError(
            f"{source}: {fail.path} is missing (the file may be truncated); expected {fail.allowed}"
        )
    where = fail.path or "the document"
    return ValidationError(f"{source}: {where} = {excerpt(fail.value)} is invalid; expected {fail.allowed}")


def json_schema(cls: type, *, title: str, description: str, schema_id: str | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of document dataclass ``cls``: its own properties at the top,
    every nested dataclass under ``$defs``."""
    root = _compile(cls)
    defs: dict[str, Any] = {}
    body = root.object_schema(defs)
    body.pop("description", None)
    out: dict[str, Any] = {"$schema": DIALECT}
    if schema_id:
        out["$id"] = schema_id
    out |= {"title": title, "description": description, **body}
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out
