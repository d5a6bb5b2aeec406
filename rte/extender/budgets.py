"""The PodDisruptionBudgets the extender knows, per namespace, fed by the PDB watch
(:class:`~rte.extender.watch.ClusterFeeds`) and read by the preempt verb
(:mod:`rte.extender.preempt`).

A malformed PDB is logged (one line) and left out: its pods then count no violation, as
kube-scheduler's ``filterPodsWithPDBViolation`` skips a PDB whose selector it cannot read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rte.consumer.preemption.pdb import Budget, budget_from_manifest
from rte.consumer.store import DELETED
from rte.errors import InputError

log = logging.getLogger(__name__)


class BudgetIndex:
    """namespace -> name -> :class:`Budget`; safe to feed from the watch thread while the verb reads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_namespace: dict[str, dict[str, Budget]] = {}
        self._view: dict[str, tuple[Budget, ...]] = {}
        self.synced = threading.Event()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(group) for group in self._by_namespace.values())

    def replace(self, objects: Iterable[Any]) -> None:
        """A (re)list: exactly ``objects`` (those well-formed)."""
        fresh: dict[str, dict[str, Budget]] = {}
        for obj in objects:
            budget = _read(obj)
            if budget is not None:
                fresh.setdefault(budget.namespace, {})[budget.name] = budget
        with self._lock:
            self._by_namespace = fresh
            self._view = {ns: tuple(group.values()) for ns, group in fresh.items()}
        self.synced.set()

    def on_event(self, event_type: str, obj: Any) -> None:
        """One watch event (``ADDED`` / ``MODIFIED`` / ``DELETED``)."""
        if event_type == DELETED:
            namespace, name = _key(obj)
            self._remove(namespace, name)
            return
        budget = _read(obj)
        if budget is None:
            # Keep no stale budget under a name whose update we cannot read.
            self._remove(*_key(obj))
            return
        with self._lock:
            group = self._by_namespace.setdefault(budget.namespace, {})
            group[budget.name] = budget
            # A new mapping, not an update in place: a snapshot handed out stays as it was.
            self._view = {**self._view, budget.namespace: tuple(group.values())}

    def snapshot(self) -> Mapping[str, Sequence[Budget]]:
        """namespace -> its budgets, as they stand now (not changed by later events)."""
        with self._lock:
            return self._view

    def _remove(self, namespace: str, name: str) -> None:
        with self._lock:
            group = self._by_namespace.get(namespace)
            if group is None or group.pop(name, None) is None:
                return
            self._view = dict(self._view)
            if group:
                self._view[namespace] = tuple(group.values())
            else:
                del self._by_namespace[namespace]
                del self._view[namespace]


def _read(obj: Any) -> Budget | None:
    try:
        return budget_from_manifest(obj, source="PodDisruptionBudget from the apiserver")
    except InputError as e:
        log.warning("ignoring a PodDisruptionBudget: %s", e)
        return None


def _key(obj: Any) -> tuple[str, str]:
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(metadata, Mapping):
        return ("", "")
    return (str(metadata.get("namespace") or "default"), str(metadata.get("name") or ""))
