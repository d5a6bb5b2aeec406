"""Pods of this node that the kubelet refused at admission over alignment: found, each counted once.

A TopologyAffinityError is the failure rte exists to prevent: the scheduler placed a pod on a
node whose kubelet could not align it, so the scheduler's view of the node was wrong. The kubelet
marks such a pod ``status.phase: Failed`` with the admission result's reason in
``status.reason`` and ``"Pod was rejected: "`` before its message in ``status.message``
(``kubernetes/kubernetes pkg/kubelet/kubelet.go``, ``rejectPod``). The reasons that concern
alignment (:data:`~rte.agent.metrics.TAE_REASONS`) come from the Topology Manager
(``pkg/kubelet/cm/topologymanager/topology_manager.go``), the static CPU manager's SMT check
(``pkg/kubelet/cm/cpumanager/policy_static.go``) and any other allocation failure
(``pkg/kubelet/cm/admission/errors.go``).

:class:`RejectionTracker` sees what the pod watch sees (each list, each event) and returns only
rejections it has not returned before, keyed by pod uid: a relist after a watch gap, or the same
failed pod updated again, never counts twice, while a pod re-created under the same name does.
Uids of pods that are gone are forgotten, so the memory stays bounded by the node's pods.

The first list after the agent starts holds failed pods of any age (the kubelet leaves them in
place). Counting them again after every agent restart would raise the alert for old news, and
ignoring them would lose a rejection that happened while the agent restarted: the first list
counts only pods created within :data:`STARTUP_LOOKBACK` (admission follows binding within
seconds), the alert rule's window.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rte.agent.metrics import TAE_REASONS

STARTUP_LOOKBACK = 600.0
"""Seconds: on the first list, a rejected pod created longer ago than this is old news."""

_PHASE_FAILED = "Failed"


@dataclass(frozen=True)
class Rejection:
    """One pod the kubelet refused; ``reason`` is one of :data:`~rte.agent.metrics.TAE_REASONS`."""

    namespace: str
    name: str
    uid: str
    reason: str
    message: str

    @property
    def pod(self) -> str:
        return f"{self.namespace}/{self.name}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _identity(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return ""
    return _text(meta.get("uid")) or f"{_text(meta.get('namespace'))}/{_text(meta.get('name'))}"


def rejection_of(obj: Mapping[str, Any]) -> Rejection | None:
    """The rejection ``obj`` (a decoded Pod) records, or None when it is not a refused pod."""
    status = obj.get("status")
    meta = obj.get("metadata")
    if not isinstance(status, Mapping) or not isinstance(meta, Mapping):
        return None
    reason = _text(status.get("reason"))
    if status.get("phase") != _PHASE_FAILED or reason not in TAE_REASONS:
        return None
    return Rejection(
        namespace=_text(meta.get("namespace")),
        name=_text(meta.get("name")),
        uid=_identity(obj),
        reason=reason,
        message=_text(status.get("message")),
    )


Refusal = tuple[Rejection, float | None]
"""A refused pod's rejection and its creation time (epoch seconds), when it has one."""


def refused(obj: Mapping[str, Any]) -> Refusal | None:
    """What :class:`RejectionTracker` needs of a listed pod: None unless the kubelet refused it."""
    found = rejection_of(obj)
    return None if found is None else (found, _created(obj))


def _created(obj: Mapping[str, Any]) -> float | None:
    meta = obj.get("metadata")
    raw = meta.get("creationTimestamp") if isinstance(meta, Mapping) else None
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw).timestamp()
    except ValueError:
        return None


class RejectionTracker:
    """New rejections from the pod watch's lists and events (one thread: the watch's)."""

    def __init__(self, *, lookback: float = STARTUP_LOOKBACK, wall: Callable[[], float] = time.time) -> None:
        self.lookback = lookback
        self._wall = wall
        self._seen: set[str] = set()  # uids of refused pods already returned (or judged old news)
        self._listed = False

    @property
    def remembered(self) -> int:
        """How many refused pods are remembered (those still present)."""
        return len(self._seen)

    def listed(self, items: Iterable[Mapping[str, Any]]) -> list[Rejection]:
        """The rejections among a full list that were not returned before."""
        return self.listed_refused(refusal for obj in items if (refusal := refused(obj)) is not None)

    def listed_refused(self, refusals: Iterable[Refusal]) -> list[Rejection]:
        """:meth:`listed` over the :func:`refused` pods of a full list, read as its pages came
        (so the list's objects need not be kept until its end)."""
        first, self._listed = not self._listed, True
        now = self._wall()
        present: set[str] = set()
        new: list[Rejection] = []
        for found, created in refusals:
            present.add(found.uid)
            if found.uid in self._seen:
                continue
            if first and created is not None and now - created > self.lookback:
                continue  # refused before this agent's time; counted by the agent that saw it
            new.append(found)
        self._seen = present
        return new

    def event(self, kind: str, obj: Mapping[str, Any]) -> Rejection | None:
        """The rejection a watch event shows, if it was not returned before."""
        if kind == "DELETED":
            self._seen.discard(_identity(obj))
            return None
        found = rejection_of(obj)
        if found is None or found.uid in self._seen:
            return None
        self._seen.add(found.uid)
        return found
