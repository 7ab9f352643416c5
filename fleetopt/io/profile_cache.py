"""The parsed form of the bundled profiles, keyed by the SHA-256 of each file's text.

Reading a profile with PyYAML costs its import (~9 ms, more than the rest of a CDF plan's
profile work) on every command. ``profiles/parsed-cache.json`` holds ``yaml.safe_load`` of every
bundled profile, written by ``scripts/build_profile_cache.py``. A file whose text hashes to an
entry gets that entry; any other text (a user's profile, an edited bundled one) is parsed as
YAML. The key is the content, so a stale entry can never be used for a changed file; a test
keeps the committed cache in step with the bundled files.

JSON has no dates, so a YAML date is stored as ``{"$date": "YYYY-MM-DD"}``.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
from functools import cache
from typing import Any

from fleetopt.io.data import bundled_dir

CACHE_FILE_NAME = "parsed-cache.json"
CACHE_FORMAT = 1
_DATE_TAG = "$date"


def text_key(text: str) -> str:
    """The cache key of a profile's text: the hex SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def encode_parsed(data: Any) -> Any:
    """A parsed YAML value as JSON data (dates tagged); raises TypeError for anything else."""
    if isinstance(data, dict):
        return {key: encode_parsed(value) for key, value in data.items()}
    if isinstance(data, list):
        return [encode_parsed(value) for value in data]
    if isinstance(data, datetime.date) and not isinstance(data, datetime.datetime):
        return {_DATE_TAG: data.isoformat()}
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    raise TypeError(f"a parsed profile holds a {type(data).__name__}, which the cache does not store")


def _decode_object(mapping: dict[str, Any]) -> Any:
    if len(mapping) == 1 and _DATE_TAG in mapping:
        return datetime.date.fromisoformat(mapping[_DATE_TAG])
    return mapping


@cache
def _entries() -> dict[str, Any]:
    """The cache's entries, read once per process ({} when the file is missing or unreadable)."""
    try:
        text = (bundled_dir("profiles") / CACHE_FILE_NAME).read_text(encoding="utf-8")
        document = json.loads(text, object_hook=_decode_object)
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("format") != CACHE_FORMAT:
        return {}
    entries = document.get("entries")
    return entries if isinstance(entries, dict) else {}


def cached_parse(text: str) -> Any | None:
    """``yaml.safe_load(text)`` from the cache when ``text`` is a bundled profile's, else None.
    Each call returns new objects (callers may keep or change them)."""
    entry = _entries().get(text_key(text))
    return None if entry is None else copy.deepcopy(entry)
