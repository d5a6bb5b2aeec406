"""What an :class:`~rte.extender.service.ExtenderService` waits for besides the NRT list, given to
it at construction by the front end that runs it (``rte extender``: :class:`~rte.extender.app.ExtenderApp`):
the pod feed, the first resync, the watches' state, leader election and its hand-off."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from rte.extender.handoff import AnsweredPods


class LeaderGate(Protocol):
    """What the service asks of leader election (:class:`~rte.extender.leadership.Leadership`)."""

    def is_leader(self) -> bool:
        """Holds the leader Lease."""
        ...

    def serving(self) -> bool:
        """Leader, and taken over: may answer the verbs."""
        ...

    def reason(self) -> str:
        """Why the verbs are not answered ("" when they are)."""
        ...

    def state(self) -> dict[str, Any]:
        """For ``/state``."""
        ...


@dataclass(frozen=True)
class Gates:
    """What readiness and serving wait for besides the NRT list, fixed when the service is made.

    The front end that runs the service says which of these it runs (``rte extender``:
    :class:`~rte.extender.app.ExtenderApp`); a service made without gates tracks pods and has no
    resync timer, no watches to report and no leader election.
    """

    pods_tracked: bool = True
    """False when no pod source runs (file-fed store): readiness then needs the NRTs only."""
    first_resync: threading.Event | None = None
    """Set by the resync timer after its first pass, which it makes as soon as the lists are
    synced (the cache expects one at start); until then the extender is not ready, so that no
    request waits behind that pass (450 ms at 20 000 nodes). None: no timer."""
    watch_status: Callable[[], Mapping[str, Any]] | None = None
    """The watches' state for ``/state`` and ``/readyz`` (errors included); None: no watches."""
    leadership: LeaderGate | None = None
    """With leader election, what gates the verbs; None: this replica always leads."""
    answered: AnsweredPods | None = None
    """With leader election, the pods answered whose binding is not seen yet (the hand-off,
    :mod:`rte.extender.handoff`)."""
