"""Quantities and ages for the cluster views' tables, in the way kubectl prints them.

Ages follow kubectl's AGE column (kubernetes/apimachinery ``pkg/util/duration/duration.go``):
two units while the smaller one still matters (``3m12s``, ``5h30m``, ``2d4h``), one after that.
Byte amounts use binary suffixes like Kubernetes quantities (``512Mi``, ``91.9Gi``), cpu and
device counts their plain quantity text (``12``, ``1500m``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from rte.cluster.status import NodeStatus
from rte.model.quantity import Amount, quantity_text

BYTE_RESOURCES = ("memory", "hugepages-")
_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def is_bytes(resource: str) -> bool:
    return resource.startswith(BYTE_RESOURCES)


def short_bytes(value: Amount) -> str:
    """``98703962112`` -> ``91.9Gi``; ``1073741824`` -> ``1Gi``; ``0`` -> ``0``."""
    amount = Fraction(value)
    unit = 0
    while abs(amount) >= 1024 and unit < len(_SUFFIXES) - 1:
        amount /= 1024
        unit += 1
    text = str(amount.numerator) if amount.denominator == 1 else f"{float(amount):.1f}".removesuffix(".0")
    return text + _SUFFIXES[unit] if text != "0" else "0"


def amount_text(resource: str, value: Amount) -> str:
    """A resource amount as a person reads it."""
    return short_bytes(value) if is_bytes(resource) else quantity_text(value)


def age_text(seconds: float | None) -> str:
    """Elapsed time as kubectl's AGE column prints it; ``<none>`` when unknown."""
    if seconds is None:
        return "<none>"
    s = int(max(seconds, 0))
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 730:
        return f"{days}d"
    years = days // 365
    return f"{years}y{days % 365}d" if years < 8 and days % 365 else f"{years}y"


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell, three spaces apart as kubectl does; no trailing blanks."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def heartbeat_text(s: NodeStatus, now: float) -> str:
    """The LEASE column: the Lease's age, else its agent pod's readiness ("ready", or for how long
    it has not been: "!12s"), else "-"."""
    if not s.leases_read:
        return "-"
    if s.lease is not None or s.agent is None:
        return age_text(s.lease_age(now))
    if s.agent.ready:
        return "ready"
    unready = s.agent_unready_for(now)
    return "!" + (age_text(unready) if unready is not None else "?")
