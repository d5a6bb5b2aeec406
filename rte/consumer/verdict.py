"""Filter's verdict for one pod on one node, whichever rules (kubelet or reference) decided it."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

from rte.model.admission.admit import Admission


class FilterCode(Enum):
    """The scheduler framework status codes Filter can return."""

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    ERROR = "Error"


_SUCCESS = FilterCode.SUCCESS  # a module global: reading an Enum member off its class is slow


class FilterResult(NamedTuple):
    """Filter's verdict for one pod on one node."""

    code: FilterCode
    reason: str
    numa_id: int | None = None
    """The zone the kubelet would pick: for pod scope, the pod's zone; for container scope, the
    zone shared by every placed container, or None when they spread (or nothing constrained)."""
    placements: tuple[tuple[str, int | None], ...] = ()
    """(container name, zone) for each container placed on one zone; None where the container
    spans zones or nothing constrained it. Reference rules list the app containers only."""
    admission: Admission | None = None
    """Kubelet rules: the model's verdict, with each unit's merged mask (what Score reads)."""

    @property
    def fits(self) -> bool:
        return self.code is _SUCCESS
