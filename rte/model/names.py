"""Kubernetes object names, as the apiserver checks them (one rule for ``rte run`` and ``rte dump``)."""

from __future__ import annotations

import re

# A lowercase RFC 1123 subdomain: what the apiserver requires of Node and NRT names
# (kubernetes/apimachinery pkg/util/validation/validation.go, IsDNS1123Subdomain).
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
MAX_NAME_LENGTH = 253


def object_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an object (a node's NRT), or None when it can."""
    if len(name) <= MAX_NAME_LENGTH and _DNS_SUBDOMAIN.fullmatch(name) is not None:
        return None
    return f"{name!r} is not a valid object name (lowercase DNS subdomain)"
