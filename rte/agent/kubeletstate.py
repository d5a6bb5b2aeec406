"""Whether the kubelet answers, as the agent loop tells it: one line when a fault starts, one
when it ends, and a readiness problem meanwhile (which also withholds the heartbeat Lease).

Two faults are kept apart, because one call's recovery says nothing of the other:

* ``kubelet``: podresources ``List`` failed (unreachable, timed out, bad data, too many pods);
  it clears only when a call answered (a cycle that reused an old List never says so);
* ``kubelet-allocatable``: ``GetAllocatableResources`` failed the same ways, an answer that does
  not decode included (issue #26 item 3): the NRT may still hold devices the kubelet dropped.
  It clears only when that call answers well, never on a good List.
"""

from __future__ import annotations

import logging

from rte.agent.pacing import Backoff
from rte.agent.status import AgentStatus
from rte.errors import InputError, RteError

log = logging.getLogger(__name__)


class KubeletState:
    """Used by the loop thread only; ``retry`` paces the List poll while the kubelet is down."""

    def __init__(self, status: AgentStatus, retry: Backoff) -> None:
        self.status = status
        self.retry = retry
        self.down: str | None = None
        """Why the last List failed; None while it answers."""
        self.allocatable_down: str | None = None

    def failed(self, error: RteError) -> None:
        detail = str(error)
        if self.down is None:
            what = "sent bad data" if isinstance(error, InputError) else "unavailable"
            log.warning("kubelet podresources %s: %s; retrying with backoff", what, detail)
        self.down = detail
        self.status.problem("kubelet", detail)

    def recovered(self) -> bool:
        """A call answered: True when the kubelet was down until now."""
        if self.down is None:
            return False
        log.info("kubelet podresources answers again")
        self.down = None
        self.retry.reset()
        self.status.problem("kubelet", None)
        return True

    def allocatable(self, problem: str | None) -> None:
        """The outcome of the last GetAllocatableResources call (None: it answered well)."""
        if problem == self.allocatable_down:
            return
        if problem is None:
            log.info("kubelet GetAllocatableResources answers again")
        elif self.allocatable_down is None:
            log.warning("kubelet GetAllocatableResources failed: %s; retrying", problem)
        self.allocatable_down = problem
        self.status.problem("kubelet-allocatable", problem)
