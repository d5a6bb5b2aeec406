"""``--priority-mix``: the priority classes of a simulation's pods, e.g. ``low=0.7,high=0.3``.

Each entry is ``<class>=<share>``; shares are positive and need not add up to 1 (they are
weights). A class later in the list has the higher priority: its value is its position (0 for the
first), which is all the scheduler compares (kube-scheduler's ``PrioritySort`` queue order and
preemption read ``spec.priority`` only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rte.errors import InputError

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""A PriorityClass name is a DNS subdomain; one label is enough here."""


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    share: float
    value: int
    """The pods' ``spec.priority``: the class's position in the mix."""


def parse_priority_mix(text: str, option: str = "--priority-mix") -> tuple[PriorityClass, ...]:
    """The classes of ``text``, lowest priority first."""
    out: list[PriorityClass] = []
    for i, entry in enumerate(text.split(",")):
        name, sep, share_text = entry.strip().partition("=")
        name = name.strip()
        if not sep or not _NAME.match(name):
            raise InputError(option, f"{entry.strip()!r} is not <class>=<share> (e.g. low=0.7,high=0.3)")
        try:
            share = float(share_text)
        except ValueError:
            raise InputError(option, f"{entry.strip()!r}: the share is not a number") from None
        if not share > 0 or share == float("inf"):
            raise InputError(option, f"{entry.strip()!r}: the share must be a positive number")
        if any(c.name == name for c in out):
            raise InputError(option, f"class {name!r} is listed twice")
        out.append(PriorityClass(name, share, i))
    return tuple(out)
