"""Times as the apiserver writes them (RFC 3339, ``2026-11-28T10:00:00Z`` or with microseconds),
read into epoch seconds in one place: the Leases', pods' and NRTs' times every reader compares."""

from __future__ import annotations

from datetime import datetime

from rte.errors import InputError


def rfc3339_seconds(text: object, where: str) -> float:
    """Epoch seconds of ``text``; an :class:`~rte.errors.InputError` naming ``where`` for anything
    else (not a string, not a time, or a time without a zone: the apiserver always writes one)."""
    if isinstance(text, datetime):  # the typed kubernetes client already decoded it
        when = text
    elif not isinstance(text, str):
        raise InputError(where, f"expected an RFC 3339 time, got {text!r}")
    else:
        try:
            when = datetime.fromisoformat(text)
        except ValueError as e:
            raise InputError(where, f"not an RFC 3339 time: {text!r}") from e
    if when.tzinfo is None:
        raise InputError(where, f"time without a zone: {text!r}")
    return when.timestamp()
