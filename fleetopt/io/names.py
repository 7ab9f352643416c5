"""Names that end up in files other programs parse, checked for their target before they are written."""

from __future__ import annotations

import re

from fleetopt.errors import ValidationError

#: A Kubernetes object name that is also a DNS-1123 label starting with a letter (Services need it).
_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def check_resource_name(value: str, option: str, longest: int) -> None:
    """Refuse ``value`` (given as ``option``) unless it is a Kubernetes name of at most ``longest``
    characters: lowercase letters, digits and '-', starting with a letter, ending alphanumeric."""
    if not _RESOURCE_NAME.fullmatch(value) or len(value) > longest:
        raise ValidationError(
            f"{option}: {value!r} is not a Kubernetes name: lowercase letters, digits and '-', starting "
            f"with a letter, at most {longest} characters"
        )
