"""Names and values that end up in files other programs parse, checked for their target before
anything is written (docs/security.md)."""

from __future__ import annotations

import re

from fleetopt.errors import ValidationError, excerpt

#: A Kubernetes object name that is also a DNS-1123 label starting with a letter (Services need it).
RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
#: A Secret's name: a DNS-1123 subdomain (Kubernetes' validation for most object names).
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
#: A container image reference (the distribution/reference grammar: [host[:port]/]path[:tag][@digest]).
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE = re.compile(
    rf"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]+)?/)?{_PATH_PART}(?:/{_PATH_PART})*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
)
#: An http(s) URL without spaces, quotes or backslashes (KEDA's serverAddress).
HTTP_URL = re.compile(r"^https?://[A-Za-z0-9.\-]+(?::[0-9]{1,5})?(?:/[^\s\"'\\<>`]*)?$")


def check_resource_name(value: str, option: str, longest: int) -> None:
    """Refuse ``value`` (given as ``option``) unless it is a Kubernetes name of at most ``longest``
    characters: lowercase letters, digits and '-', starting with a letter, ending alphanumeric."""
    if not RESOURCE_NAME.fullmatch(value) or len(value) > longest:
        raise ValidationError(
            f"{option}: {excerpt(value)} is not a Kubernetes name: lowercase letters, digits and '-', "
            f"starting with a letter, at most {longest} characters"
        )


def check_option_text(value: str, option: str, pattern: re.Pattern, longest: int, allowed: str) -> None:
    """Refuse ``value`` (given as ``option``) unless ``pattern`` matches it whole and it has at most
    ``longest`` characters; ``allowed`` says what is."""
    if not pattern.fullmatch(value) or len(value) > longest:
        raise ValidationError(f"{option}: {excerpt(value)} is not allowed; expected {allowed}")


#: An absolute host path of letters, digits, '/', '.', '_' and '-' (a hostPath volume).
HOST_PATH = re.compile(r"^(/[A-Za-z0-9._-]+)+/?$")
#: A label key ([prefix/]name, prefix a DNS subdomain) and a label value (Kubernetes' rules).
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def check_label(key: str, value: str, option: str) -> None:
    """Refuse a Kubernetes label (or taint) ``key``=``value`` that the API server would refuse."""
    if not _LABEL_KEY.fullmatch(key) or len(key) > 317 or not _LABEL_VALUE.fullmatch(value):
        raise ValidationError(
            f"{option}: {excerpt(key)}={excerpt(value)} is not a Kubernetes label: a key [prefix/]name and a "
            "value of letters, digits, '-', '_' and '.' (at most 63)"
        )
