"""What every NRT cache offers the filter, the score and the front ends.

Three implementations exist, chosen by :func:`rte.consumer.cache.selection.make_cache`, as in
the reference plugin (kubernetes-sigs/scheduler-plugins
``pkg/noderesourcetopology/cache/cache.go``): OverReserve (the reserve cache,
:mod:`~rte.consumer.cache.overreserve`), DiscardReserved
(:mod:`~rte.consumer.cache.discardreserved`) and Passthrough
(:mod:`~rte.consumer.cache.passthrough`). The simulator swaps them to compare modes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from rte.consumer.cache.resync import Comparison, PodsInput
from rte.consumer.config import CacheConfig
from rte.consumer.numaview import NumaView
from rte.model.pod import Pod

Clock = Callable[[], float]
"""Seconds since the epoch (the time base of Lease renewals); injected so tests need no sleeping."""


class Lookup(NamedTuple):
    """The answer for one node: the view to decide on (None: no NRT) and whether it is usable.

    ``fresh`` False means the filter must reject the node ("invalid node topology data") and the
    score must give 0, whatever ``view`` holds. Feed it straight to the filter:
    ``filter_node(pod, lookup.view, allocatable, fresh=lookup.fresh)``.
    """

    view: NumaView | None
    fresh: bool


NOT_FRESH = Lookup(None, False)
NO_NRT = Lookup(None, True)


@dataclass(frozen=True)
class ResyncReport:
    """What one resync pass did, for logs, metrics and tests."""

    flushed: tuple[str, ...] = ()
    """Nodes whose fingerprint matched: cache replaced, marks cleared."""
    config_flushed: tuple[str, ...] = ()
    """Nodes replaced because their Topology Manager configuration changed (no fingerprint check)."""
    still_dirty: tuple[str, ...] = ()
    """Nodes checked without a match: they stay marked and are retried next time."""
    comparisons: Mapping[str, Comparison] = field(default_factory=dict)


class NRTCache(Protocol):
    """The interface the filter, the score and the front ends use."""

    @property
    def generation(self) -> int: ...

    @property
    def config(self) -> CacheConfig: ...

    def get(self, node: str, pod: Pod | None = None) -> Lookup: ...

    def reserve(self, node: str, pod: Pod) -> None: ...

    def unreserve(self, node: str, pod: Pod) -> None: ...

    def post_bind(self, node: str, pod: Pod) -> None: ...

    def mark_maybe_over_reserved(self, node: str) -> None: ...

    def note_filter_success(self, node: str) -> None: ...

    def on_pod_event(self, event_type: str, pod: Pod) -> None: ...

    def resync(self, pods: PodsInput, now: float | None = None) -> ResyncReport: ...

    def unfresh_reason(self, node: str) -> str: ...

    def state_dump(self, now: float | None = None) -> dict[str, Any]: ...


Cursor = tuple[int, int, int, float, bool]
"""Where a reader of a cache's changes stands: the store's generation, the cache's own change
serial, the store's heartbeat serial, the cache's clock then, and whether the cache's answers
then depended on the clock in a way it does not track (every node may change)."""

Select = Callable[[Collection[str] | None], Iterable[str]]
"""Given the nodes whose answer may have changed since a cursor (None: any node's may have), the
nodes the reader wants looked up now."""


class Snapshot(NamedTuple):
    """What :meth:`BatchedCache.lookup_changed` returns: the new cursor and the lookups asked for."""

    cursor: Cursor
    lookups: list[tuple[str, Lookup]]


@runtime_checkable
class BatchedCache(Protocol):
    """What a cache offers a front end deciding many nodes per request, each call under one lock:
    lookups of only the nodes that changed (the kernel's mirror keeps the rest) and the Filter
    bookkeeping of a whole request. The three caches of :mod:`rte.consumer.cache` offer it; a
    cache without it is asked node by node (:mod:`rte.consumer.kernel.mirror`)."""

    def lookup_changed(self, cursor: Cursor | None, select: Select) -> Snapshot:
        """Under one lock: the nodes changed since ``cursor`` go to ``select``, and the nodes it
        returns are looked up as :meth:`NRTCache.get` would (``cursor`` None: the first call)."""
        ...

    def record_filter(
        self, passed: Iterable[str], failed: Iterable[str], unfresh: Sequence[str]
    ) -> list[str]:
        """Under one lock, what :func:`rte.consumer.cycle.record_outcome` does per node: the
        ``passed`` nodes end their failure streak, the ``failed`` ones (on data the cache
        trusted) are marked maybe over-reserved; returns :meth:`NRTCache.unfresh_reason` of
        each of ``unfresh``."""
        ...


@runtime_checkable
class TrackingCache(Protocol):
    """A cache that tells the nodes it knows from names it never heard of: it answers every one
    of the latter alike, so a front end need not keep anything per such name (a client may send
    millions of them: :mod:`rte.consumer.kernel.mirror`)."""

    def tracked(self, nodes: Sequence[str]) -> list[bool]:
        """Per node: whether its answer may differ from that of a name the cache never heard
        of. Call it only from the ``select`` of :meth:`BatchedCache.lookup_changed` (the cache's
        lock held; it takes none of its own), so that the answer agrees with the changes
        reported: a node turning tracked is reported as changed by the next call."""
        ...


@runtime_checkable
class ScoreViewsCache(Protocol):
    """A cache whose Score may rate other views than Filter decides on: the reserve cache's best
    estimates (:mod:`rte.consumer.cache.estimate`). A cache without it scores what it serves."""

    def score_views(self, nodes: Collection[str] | None = None) -> dict[str, NumaView]:
        """Under one lock, the views Score rates where they differ from the (fresh) view
        :meth:`NRTCache.get` serves: of ``nodes``, or of every node (None)."""
        ...


_CLASS_ANSWERS: dict[tuple[type, type], tuple[bool, frozenset[str], bool]] = {}


def implements(obj: object, protocol: type) -> bool:
    """``isinstance(obj, protocol)`` for a runtime-checkable protocol of methods, answered by
    ``obj``'s class where it can be: a runtime protocol check looks up every member each time
    (a tenth of a millisecond, twice per request).

    Per class, once: whether it implements ``protocol``, and if not, which members it lacks and
    whether it answers attributes dynamically (``__getattr__``). The instance is asked only when
    it could make up for its class (its own attributes name a lacking member, or its class is
    dynamic), so the answer is ``isinstance``'s, and a class without the members costs a
    dictionary lookup (what the front ends ask of every cache: :class:`BatchedCache`,
    :class:`ScoreViewsCache`).
    """
    kind = type(obj)
    known = _CLASS_ANSWERS.get((kind, protocol))
    if known is None:
        members = {name for name in vars(protocol) if not name.startswith("_")}
        lacking = frozenset(name for name in members if getattr(kind, name, None) is None)
        dynamic = hasattr(kind, "__getattr__") or kind.__getattribute__ is not object.__getattribute__
        known = _CLASS_ANSWERS[kind, protocol] = (issubclass(kind, protocol), lacking, dynamic)
    by_class, lacking, dynamic = known
    if by_class:
        return True
    own = getattr(obj, "__dict__", None)
    if dynamic or (own and not lacking.isdisjoint(own)):
        return isinstance(obj, protocol)
    return False
