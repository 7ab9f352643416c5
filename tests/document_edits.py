"""Random edits of real documents, to check that a document's reader accepts exactly what its
published schema accepts (tests/test_schemas.py, tests/test_observe_prometheus.py)."""

from __future__ import annotations

import copy

import jsonschema
from hypothesis import strategies as st

from fleetopt.io.documents.typed import from_document


def errors(validator: jsonschema.Draft202012Validator, document: dict) -> list[str]:
    """Every schema error of ``document``, as ``path: message``."""
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


#: Values an edit puts in place of a field (JSON's: no NaN or infinity, which YAML alone can carry
#: and the readers refuse while JSON Schema cannot say so).
REPLACEMENTS = (
    None,
    True,
    False,
    -1,
    0,
    1,
    2,
    0.5,
    2.5,
    -0.5,
    1e300,
    "",
    "x",
    "peak",
    [],
    [1],
    [0.5, 1.0],
    {},
    {"a": 1},
)


def _paths(value, prefix=()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            out += _paths(item, (*prefix, index))
    return out


@st.composite
def edited(draw, document: dict) -> dict:
    """``document`` with one to three random edits: a key removed, an unknown key added, or a value
    (or a whole subtree) replaced."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["remove", "add", "replace"]))
        if not path:
            continue
        key = path[-1]
        if action == "remove" and isinstance(parent, dict):
            del parent[key]
        elif action == "add" and isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(["extra", "notes_2", "Pools"]))] = draw(
                st.sampled_from(REPLACEMENTS)
            )
        else:
            parent[key] = copy.deepcopy(draw(st.sampled_from(REPLACEMENTS)))
    return document


def reads(cls: type, document: dict) -> bool:
    """Whether the reader of document class ``cls`` accepts ``document``."""
    from fleetopt.errors import ValidationError

    try:
        from_document(cls, document, "x")
    except ValidationError:
        return False
    return True
