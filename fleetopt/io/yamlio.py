"""Reading the YAML and JSON documents users give fleetopt (profiles, plans, router files, CDFs,
summaries, measurements), strictly.

YAML is read with libyaml's C loader when PyYAML was built with it (the pure-Python loader is ~10×
slower: a 2 MB plan took 16 s), the pure-Python safe loader otherwise — both safe loaders (no
arbitrary objects). Before any value is built, the document's node graph is checked:

* no anchors and aliases (``&a``/``*a``, merge keys ``<<: *a``): fleetopt never writes them, and
  a few nested aliases expand a 1 KB file into gigabytes (a "billion laughs" document) that any
  later use — even an error message quoting the value — would have to walk;
* no key twice in one mapping (YAML 1.2 forbids it; PyYAML keeps the last silently);
* no whole number of more than 100 digits (Python refuses to convert more than 4,300).

JSON documents are read by :func:`json_loads`, which refuses a key given twice in one object
(Python's ``json`` keeps the last silently). Every YAML document fleetopt writes (plans, exported
files, measured profiles) goes through :func:`dump_yaml` (libyaml's emitter when available, as for
reading), so what it writes it reads back as it was.
"""

from __future__ import annotations

import json
from typing import Any


def _yaml_error(message: str, mark: Any) -> Exception:
    """A ``yaml.MarkedYAMLError`` (what callers already catch and format) whose one-line text
    says where: ``line L, column C: message``."""
    import yaml

    return yaml.MarkedYAMLError(problem=f"line {mark.line + 1}, column {mark.column + 1}: {message}")


#: The most digits a whole number in a YAML or JSON document may have (Python refuses to convert
#: more than 4,300 — an internal error — and converts a long one in quadratic time; fleetopt's
#: largest numbers have about 20).
MAX_INTEGER_DIGITS = 100
_INT_TAG = "tag:yaml.org,2002:int"


def _check_nodes(root: Any) -> None:
    """Refuse a node reached twice (an alias), a mapping key given twice and a whole number of more
    than :data:`MAX_INTEGER_DIGITS` digits, walking the composed node graph once (each node visited
    once: the walk stops at the first alias)."""
    import yaml

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise _yaml_error(
                "the value starting here has an anchor (&name) that an alias (*name) repeats; "
                "fleetopt reads no YAML anchors and aliases (a few can expand a small file into "
                "gigabytes): write the value out",
                node.start_mark,
            )
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[tuple[str, str]] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value == "<<" and key.tag == "tag:yaml.org,2002:merge":
                        raise _yaml_error(
                            "a merge key (<<) copies another mapping; fleetopt reads no YAML aliases or "
                            "merges: write the fields out",
                            key.start_mark,
                        )
                    identity = (key.tag, key.value)
                    if identity in keys:
                        from fleetopt.errors import excerpt

                        raise _yaml_error(
                            f"the key {excerpt(key.value)} appears twice in one mapping; keep one",
                            key.start_mark,
                        )
                    keys.add(identity)
                stack.append(key)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif node.tag == _INT_TAG and len(node.value) > MAX_INTEGER_DIGITS:
            raise _yaml_error(
                f"a whole number of {len(node.value):,} characters; fleetopt reads whole numbers of at "
                f"most {MAX_INTEGER_DIGITS} digits",
                node.start_mark,
            )


def safe_load(text: str) -> Any:
    """The YAML document ``text`` (``CSafeLoader`` when available), refusing aliases and repeated
    keys; raises ``yaml.YAMLError`` (a ``MarkedYAMLError`` with the line and column for those)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


class DuplicateKeyError(ValueError):
    """A JSON object gives one key twice."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        from fleetopt.errors import excerpt

        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"the key {excerpt(key)} appears twice in one object; keep one")
            seen.add(key)
    return document


def _integer(text: str) -> int | float:
    """A JSON whole number; one of more than :data:`MAX_INTEGER_DIGITS` digits is read as a float
    (inf past 1e308), as JSON reads ``1e999``, and refused by the check of its field."""
    return int(text) if len(text) <= MAX_INTEGER_DIGITS else float(text)


def json_loads(text: str | bytes) -> Any:
    """``json.loads`` that refuses an object with a key given twice (:class:`DuplicateKeyError`, a
    ValueError, as json's own errors are) and reads a whole number too long to be one of fleetopt's
    as a float (:func:`_integer`)."""
    return json.loads(text, object_pairs_hook=_unique_pairs, parse_int=_integer)


def dump_yaml(document: Any, *, width: int | None = None) -> str:
    """Block-style YAML from PyYAML's serializer (keys in their order), without anchors or aliases
    (:func:`safe_load` refuses them; a document repeating an equal object writes it twice). A string
    holding anything but printable characters (a line break, U+2028, U+2029, NEL, a control
    character) is written double-quoted with escapes: PyYAML writes them raw inside single quotes,
    where a reader folds a line break into a space and reads NEL back as a space."""
    import yaml

    # libyaml's emitter when PyYAML has it (3.7× faster on plan documents, byte-identical output:
    # checked on 33 plans and on strings with line breaks, U+2028, NEL, quotes and long words)
    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def text(dumper: Any, value: str) -> Any:
        style = None if value.isprintable() else '"'
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    options: dict[str, Any] = {} if width is None else {"width": width}
    return yaml.dump(document, Dumper=Dumper, sort_keys=False, allow_unicode=True, **options)
