"""The consumer's library front end: one pod against many nodes, Filter then Score.

:func:`evaluate` is what ``rte fit`` calls. The pod is prepared once; each node brings its
precomputed :class:`~rte.consumer.numaview.NumaView` (or None without an NRT), the names of its
allocatable resources when the Node object is known, and whether the reserve cache still trusts
its data. :func:`evaluate_table` is the same over a :func:`node_table` built once for many pods,
with columnar results: the form for thousands of nodes. :func:`evaluate_through_cache` is the
same for a scheduler that keeps a reserve cache: nodes by name, views from the cache, and the
cache's bookkeeping done as the extender does it. All of them decide through the kernel
(:mod:`rte.consumer.kernel`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rte.consumer.cache.interface import NRTCache
from rte.consumer.cycle import evaluate_nodes
from rte.consumer.kernel.decide import Verdicts, decide
from rte.consumer.kernel.table import NodeTable
from rte.consumer.numaview import NumaView
from rte.consumer.requests import PreparedPod, RecentPods
from rte.consumer.score import DEFAULT_STRATEGY, Scorer, ScoringStrategy
from rte.consumer.strategies import DEFAULT_WEIGHTS
from rte.errors import InputError
from rte.model.pod import Pod, nonnegative_quantities
from rte.model.quantity import Amount
from rte.model.vocabulary import Compat


@dataclass(frozen=True, slots=True)
class NodeCandidate:
    """One node as the consumer sees it."""

    name: str
    view: NumaView | None = None
    """The node's NUMA view; None when it publishes no NRT."""
    allocatable: Collection[str] | None = None
    """Names (or a mapping) from the Node's ``status.allocatable``; None when the Node is unknown,
    which makes Filter's node-allocatable check pass."""
    fresh: bool = True
    """False when the reserve cache distrusts the view (foreign pods, pending resync)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict for one node: the shape ``rte fit -o json`` prints."""

    node: str
    fits: bool
    reason: str
    score: int | None
    """0..100 for nodes that fit; None for filtered-out nodes (the scheduler never scores them)."""

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "fits": self.fits, "reason": self.reason, "score": self.score}


def _strategy(strategy: ScoringStrategy | str, weights: Mapping[str, int] | None) -> ScoringStrategy:
    if isinstance(strategy, str):
        return ScoringStrategy(strategy, dict(weights) if weights is not None else dict(DEFAULT_WEIGHTS))
    return strategy if weights is None else ScoringStrategy(strategy.type, dict(weights))


_RECENT = RecentPods()
"""The pods these functions prepared last: the same pod evaluated again is not prepared again."""


def _prepared(pod: Pod | PreparedPod, compat: Compat | str) -> PreparedPod:
    if isinstance(pod, PreparedPod):
        return pod
    return _RECENT.prepare(pod, Compat.parse(compat, "compat"))


def node_table(nodes: Iterable[NodeCandidate]) -> NodeTable:
    """The columns of ``nodes`` that :func:`evaluate_table` decides on, built once for many pods.

    Node names must be distinct. When a node's view changes, rewrite its row in place:
    ``table.put(table.row(name), view, fresh, allocatable)``.
    """
    nodes = list(nodes)
    return NodeTable.of(
        [n.name for n in nodes],
        [n.view for n in nodes],
        [n.fresh for n in nodes],
        [n.allocatable for n in nodes],
    )


def evaluate_table(
    pod: Pod | PreparedPod,
    table: NodeTable,
    strategy: ScoringStrategy | str = DEFAULT_STRATEGY,
    weights: Mapping[str, int] | None = None,
    *,
    rows: Sequence[int] | None = None,
    compat: Compat | str = Compat.KUBELET,
) -> Verdicts:
    """Filter and score ``pod`` on the table's nodes (``rows``: a selection, by row index), as
    columns: ``verdicts.fits`` and ``verdicts.scores`` (-1 where filtered out) are NumPy arrays
    in row order, ``verdicts.names()`` and ``verdicts.reasons()`` lists. The fast form of
    :func:`evaluate` for a scheduler that keeps its nodes in a :func:`node_table`."""
    prep = _prepared(pod, compat)
    return decide(prep, table, rows, _strategy(strategy, weights))


def evaluate(
    pod: Pod | PreparedPod,
    nodes: Iterable[NodeCandidate],
    strategy: ScoringStrategy | str = DEFAULT_STRATEGY,
    weights: Mapping[str, int] | None = None,
    *,
    compat: Compat | str = Compat.KUBELET,
) -> list[Decision]:
    """Filter and score ``pod`` on every node, in the order given.

    ``strategy`` is a :class:`ScoringStrategy` or a strategy type name (``LeastAllocated``, ...);
    ``weights`` (used with a name) are the per-resource weights. ``compat`` chooses the rules:
    the kubelet's admission (the default) or ``reference``, the reference plugin's decisions bit
    for bit; it applies to a plain Pod (a prepared pod keeps the rules it was prepared for).
    """
    nodes = list(nodes)
    prep = _prepared(pod, compat)
    scoring = _strategy(strategy, weights)
    # Rows keyed by position: the same node may be listed twice.
    table = NodeTable.of(
        [str(i) for i in range(len(nodes))],
        [n.view for n in nodes],
        [n.fresh for n in nodes],
        [n.allocatable for n in nodes],
    )
    verdicts = decide(prep, table, None, scoring)
    return [
        Decision(node.name, fits, reason, verdicts.score(k))
        for k, (node, fits, reason) in enumerate(
            zip(nodes, verdicts.fits.tolist(), verdicts.reasons(), strict=True)
        )
    ]


def evaluate_through_cache(
    pod: Pod | PreparedPod,
    nodes: Iterable[str],
    cache: NRTCache,
    strategy: ScoringStrategy | str = DEFAULT_STRATEGY,
    weights: Mapping[str, int] | None = None,
    *,
    allocatable: Mapping[str, Collection[str]] | None = None,
    compat: Compat | str = Compat.KUBELET,
) -> list[Decision]:
    """:func:`evaluate` for a scheduler that keeps a reserve cache (:mod:`rte.consumer.cache`).

    Views come from ``cache``, and the cache is told what Filter found, exactly as the scheduler
    extender does (:mod:`rte.consumer.cycle`): failures on trusted data mark the node for the
    next resync, successes reset its failure streak, the load-aware score mode applies. After
    picking a node, call ``cache.reserve(node, pod)``; ``cache.unreserve`` if binding fails.
    ``allocatable`` maps node names to their ``status.allocatable`` names, where known;
    ``compat`` as in :func:`evaluate`.
    """
    prep = _prepared(pod, compat)
    names = list(nodes)
    evaluation = evaluate_nodes(prep, names, cache, Scorer(prep, _strategy(strategy, weights)), allocatable)
    reasons = evaluation.filtered.reasons
    return [
        Decision(name, score >= 0, reasons[name], score if score >= 0 else None)
        for name, score in zip(names, evaluation.scores.tolist(), strict=True)
    ]


def node_allocatable(node: Mapping[str, Any], source: str = "node") -> dict[str, Amount]:
    """``status.allocatable`` of a Node object (decoded JSON/YAML), parsed; errors name the field."""
    if not isinstance(node, Mapping):
        raise InputError(source, f"expected a Node object, got {type(node).__name__}")
    kind = node.get("kind", "Node")
    if kind != "Node":
        raise InputError(f"{source}: kind", f"expected Node, got {kind!r}")
    status = node.get("status") or {}
    allocatable = status.get("allocatable") if isinstance(status, Mapping) else None
    return nonnegative_quantities(allocatable, f"{source}: status.allocatable")
