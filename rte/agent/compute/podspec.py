"""A pod from the API as the fingerprint's spec rule reads it, in a few dozen bytes.

The agent's pod watch keeps one entry per pod bound to its node. A whole
:class:`~rte.model.pod.Pod` (containers, request maps, uid, labels) was some 600 bytes a pod,
yet the spec rule of :mod:`rte.agent.compute.podset` reads only whether each informer mode
counts the pod (:func:`rte.model.pod.counts_for_fingerprint`), whether it ended, and whether it
holds exclusive resources (:func:`rte.model.exclusive.is_exclusive`). The last depends on the
resources the NRT publishes, but only through the pod's non-native requests: the rule is "some
native request is exclusive (a Guaranteed pod's integral CPUs, its memory or hugepages), or some
non-native request names a published resource", so the native half is decided once, from the
pod, and the non-native names are kept for the published set of each cycle.

Each answer is computed by the model's own functions from the :class:`Pod`, so the rules stay in
one place; ``tests/agent/test_podspec.py`` holds the two equal over random pods. A record says
nothing of which pod it is, so the pods of a Deployment (or any pods alike to the rule) share
one: a pod then costs the pod watch its key and a dict entry.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from rte.model.exclusive import is_exclusive, is_native_resource
from rte.model.pod import Pod, counts_for_fingerprint
from rte.model.sharing import SharedValues
from rte.model.vocabulary import InformerMode

_DEDICATED = 1
_SHARED = 2
_TERMINAL = 4
_NATIVE_EXCLUSIVE = 8

_NO_NAMES: frozenset[str] = frozenset()
"""The non-native request names of nearly every pod (an empty frozenset is 216 bytes each)."""


_SHARED_SPECS: SharedValues[PodSpec] = SharedValues(1024)
"""The records in use, by value (a handful: flags x extended names)."""


@dataclass(frozen=True, slots=True)
class PodSpec:
    """What the spec rule reads of one pod: the booleans packed in a small int, and the
    non-native resources its sidecars and app containers request (usually none)."""

    flags: int
    extended: frozenset[str]

    @classmethod
    def of(cls, pod: Pod) -> PodSpec:
        """The record of ``pod``, shared with the pods alike to the rule."""
        spec = cls._of(pod)
        return _SHARED_SPECS.share(spec, spec)

    @classmethod
    def _of(cls, pod: Pod) -> PodSpec:
        flags = 0
        if counts_for_fingerprint(pod, InformerMode.DEDICATED):
            flags |= _DEDICATED
        if counts_for_fingerprint(pod, InformerMode.SHARED):
            flags |= _SHARED
        if pod.is_terminal:
            flags |= _TERMINAL
        if is_exclusive(pod, ()):  # with nothing published, only native requests can count
            flags |= _NATIVE_EXCLUSIVE
        extended = frozenset(
            res for c in pod.sidecars + pod.containers for res in c.requests if not is_native_resource(res)
        )
        return cls(flags, extended or _NO_NAMES)

    def counts_for_fingerprint(self, mode: InformerMode) -> bool:
        """:func:`rte.model.pod.counts_for_fingerprint` of the pod."""
        return bool(self.flags & (_SHARED if mode is InformerMode.SHARED else _DEDICATED))

    @property
    def is_terminal(self) -> bool:
        return bool(self.flags & _TERMINAL)

    def is_exclusive(self, nrt_resource_names: Collection[str]) -> bool:
        """:func:`rte.model.exclusive.is_exclusive` of the pod."""
        if self.flags & _NATIVE_EXCLUSIVE:
            return True
        return any(res in nrt_resource_names for res in self.extended)
