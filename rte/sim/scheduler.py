"""The simulated scheduler's decisions: node-level fit, then the real NUMA Filter and Score.

Per scheduling cycle, as a kube-scheduler profile with the NUMA plugin would: a node must pass
the node-level resource fit (``NodeResourcesFit``: the scheduler's own, always current,
accounting of pods placed on the node), then :func:`rte.consumer.filter.filter_node` on the
view the NRT cache serves; the survivors are ranked by :func:`rte.consumer.score.score_node`
and the best one wins (ties: a seeded random pick among the best, like the framework's
``selectHost``). Every node is evaluated (no ``percentageOfNodesToScore`` sampling), and only
the NUMA score counts.

**Why it is fast.** A verdict depends only on the pod's shape and the node's state, and the
simulator knows every event that changes a node's state (an NRT reaching the store, a
reservation, a bind, a pod that ends, a cache flush). So verdicts and scores are memoised per
(pod shape, node) and recomputed only for nodes changed since that shape was last scheduled;
picking the best node is then one pass over the memo. Many changed nodes are decided at once by
the consumer's decision kernel (:mod:`rte.consumer.kernel`) over a table of the views the cache
serves, fewer one by one on the scalar path (see :data:`KERNEL_MIN_NODES`); both give the same
answers. With ``verify`` every cycle also recomputes every node from
scratch on the scalar path and raises if the memo differs (tests use it).

**One cycle with the extender.** Each node is evaluated by the consumer's own cycle steps
(:func:`rte.consumer.cycle.filter_one`, :func:`~rte.consumer.cycle.score_one` on what
:func:`~rte.consumer.cycle.score_lookup` gives: the reserve cache's best estimate) and verdicts
reach the cache through :func:`~rte.consumer.cycle.record_verdict`, as in the extender.
Replaying thousands of unchanged verdicts per cycle would dominate the run, so the simulator
mirrors the only state those calls change that matters (the streak and the dirty mark, which
only a flush clears) and replays only the verdicts that change it.
"""

from __future__ import annotations

import random
from bisect import bisect_left, insort
from collections.abc import Collection, Mapping, Sequence

from rte.consumer.cache.interface import Lookup, NRTCache
from rte.consumer.cycle import record_outcome, score_lookup, score_one
from rte.consumer.filter import filter_node
from rte.consumer.kernel.decide import decide
from rte.consumer.kernel.table import NodeTable
from rte.consumer.numaview import NumaView
from rte.consumer.requests import PreparedPod
from rte.consumer.score import Scorer, ScoringStrategy
from rte.model.pod import Pod, kubelet_pod_request
from rte.model.quantity import Amount

KERNEL_MIN_NODES = 384
"""Changed nodes from which one kernel call decides them, rather than the scalar path node by node.

Every agent update brings a new view, whose table row costs more to write than one scalar
evaluation, and a kernel call has a fixed cost near a millisecond: measured on 8-zone nodes and
four pod shapes, the kernel wins from about 350 changed nodes (the first cycles, big bursts)."""


class _Ranking:
    """The feasible nodes' scores, and per score its nodes in ascending order: the best nodes
    in order without a pass over every node each cycle (scores are 0..100)."""

    def __init__(self) -> None:
        self.scores: dict[int, int] = {}
        self._by_score: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return len(self.scores)

    def __contains__(self, node: object) -> bool:
        return node in self.scores

    def add(self, node: int, score: int) -> None:
        """Rank ``node`` (not ranked yet) at ``score``."""
        self.scores[node] = score
        insort(self._by_score.setdefault(score, []), node)

    def discard(self, node: int) -> None:
        score = self.scores.pop(node, None)
        if score is None:
            return
        nodes = self._by_score[score]
        del nodes[bisect_left(nodes, node)]
        if not nodes:
            del self._by_score[score]

    def best(self, excluded: Collection[int] = ()) -> list[int]:
        """The nodes of the highest score, ascending (empty when none is feasible), ``excluded``
        nodes left out."""
        if not excluded:
            return self._by_score[max(self._by_score)] if self._by_score else []
        for score in sorted(self._by_score, reverse=True):
            nodes = [n for n in self._by_score[score] if n not in excluded]
            if nodes:
                return nodes
        return []


def _forget_views(prep: PreparedPod) -> None:
    """Drop the verdicts ``prep`` remembers per view (:func:`rte.consumer.filter.filter_node`
    keeps one per view object it saw, for the life of the prepared pod: one scheduling cycle in
    the extender, the whole run here, where they kept every view ever filtered alive: most of
    the memory at 5000 nodes, issue #27). The scheduler's own memo (``_lookups``) reuses a
    verdict while the cache serves the same view; a verdict is a pure function of the view, so
    forgetting one changes no decision."""
    memo = prep.memo
    stale = [key for key in memo if isinstance(key, NumaView)]
    for key in stale:
        del memo[key]


class VerifyError(AssertionError):
    """The memoised verdicts differ from a full recomputation (a missed invalidation)."""


class SimScheduler:
    """Decisions over ``nodes`` for pods of a fixed set of shapes."""

    def __init__(
        self,
        *,
        node_names: Sequence[str],
        node_allocatable: Sequence[Mapping[str, int]],
        cache: NRTCache,
        shapes: Sequence[PreparedPod],
        strategy: ScoringStrategy,
        rng: random.Random,
        report_marks: bool,
        dirty_after_failures: int = 1,
        verify: bool = False,
    ) -> None:
        self.names = list(node_names)
        self.allocatable = [dict(a) for a in node_allocatable]
        self.allocatable_names = [frozenset(a) for a in node_allocatable]
        self.used: list[dict[str, Amount]] = [{} for _ in self.names]
        self.cache = cache
        self.shapes = list(shapes)
        self.requests = [{r: q for r, q in kubelet_pod_request(p.pod).items() if q} for p in self.shapes]
        self.strategy = strategy
        self.rng = rng
        self.report_marks = report_marks
        self.dirty_after = dirty_after_failures
        self.verify = verify
        every = range(len(self.names))
        self._dirty: list[set[int]] = [set(every) for _ in self.shapes]
        self._feasible: list[_Ranking] = [_Ranking() for _ in self.shapes]
        self._numa_fail: list[set[int]] = [set() for _ in self.shapes]
        self._streak = [0] * len(self.names)
        self._streaking: set[int] = set()
        self._marked: set[int] = set()
        self._lookups: list[dict[int, tuple[bool, str, Lookup]]] = [{} for _ in self.shapes]
        """The last verdict (fits, reason) and lookup per (shape, node), replayed to the cache's
        bookkeeping."""
        self._scores: list[dict[int, tuple[NumaView | None, bool, int]]] = [{} for _ in self.shapes]
        """The last score per (shape, node) and the view it rated (kept alive, so compared by
        identity): :meth:`_evaluate` rates a view only once."""
        self.scorers = [Scorer(p, strategy) for p in self.shapes]
        self.evaluations = 0
        """Filter (and Score) evaluations actually computed."""
        self.table = NodeTable(capacity=len(self.names))
        """The views the cache served, row ``k`` for node ``k``: what the kernel decides on."""
        for name, names in zip(self.names, self.allocatable_names, strict=True):
            self.table.put(self.table.row(name), None, True, names)

    # --- state changes -------------------------------------------------------------------

    def node_changed(self, node: int) -> None:
        """Something a verdict on ``node`` depends on changed."""
        for dirty in self._dirty:
            dirty.add(node)

    def assume(self, node: int, shape: int) -> None:
        """A pod of ``shape`` now counts against ``node`` (reserved, bound or running)."""
        used = self.used[node]
        for r, q in self.requests[shape].items():
            used[r] = used.get(r, 0) + q
        self.node_changed(node)

    def forget(self, node: int, shape: int) -> None:
        """A pod of ``shape`` no longer counts against ``node`` (it ended or failed)."""
        used = self.used[node]
        for r, q in self.requests[shape].items():
            used[r] -= q
        self.node_changed(node)

    def flushed(self, node: int) -> None:
        """The reserve cache flushed ``node`` after a fingerprint match: its marks are gone."""
        self._marked.discard(node)
        self._streak[node] = 0
        self._streaking.discard(node)
        self.node_changed(node)

    # --- decisions -----------------------------------------------------------------------

    def node_fits(self, node: int, shape: int) -> bool:
        """``NodeResourcesFit``: the request fits what the node has left, node-wide."""
        allocatable, used = self.allocatable[node], self.used[node]
        return all(used.get(r, 0) + q <= allocatable.get(r, 0) for r, q in self.requests[shape].items())

    def _evaluate(self, node: int, shape: int, reuse: bool = True) -> int | None:
        """The NUMA score when the node passes Filter, else None (node-level failures: -1).

        :func:`~rte.consumer.cycle.filter_one` in two steps: the verdict and the score are pure
        functions of the view the cache serves (and of its freshness), so when the cache serves
        the very same view object as the last time (``reuse``), they are taken from the memo."""
        if not self.node_fits(node, shape):
            return -1
        prep, name = self.shapes[shape], self.names[node]
        self.evaluations += 1
        lookup = self.cache.get(name, prep.pod)
        memo = self._lookups[shape]
        last = memo.get(node) if reuse else None
        if last is not None and last[2].view is lookup.view and last[2].fresh == lookup.fresh:
            fits, reason = last[0], last[1]
        else:
            verdict = filter_node(prep, lookup.view, self.allocatable_names[node], fresh=lookup.fresh)
            fits, reason = verdict.fits, verdict.reason
        memo[node] = (fits, reason, lookup)
        if not fits:
            return None
        scored = score_lookup(self.cache, name, lookup)
        scores = self._scores[shape]
        kept = scores.get(node) if reuse else None
        if kept is not None and kept[0] is scored.view and kept[1] == scored.fresh:
            return kept[2]
        score = score_one(prep, scored, self.scorers[shape], self.cache.config.load)
        scores[node] = (scored.view, scored.fresh, score)
        return score

    def _refresh(self, shape: int) -> None:
        dirty = self._dirty[shape]
        if not dirty:
            return
        feasible, numa_fail = self._feasible[shape], self._numa_fail[shape]
        nodes = sorted(dirty)
        for node in nodes:
            feasible.discard(node)
            numa_fail.discard(node)
        if len(nodes) >= KERNEL_MIN_NODES:
            self._decide_many([n for n in nodes if self.node_fits(n, shape)], shape)
        else:
            for node in nodes:
                result = self._evaluate(node, shape)
                if result is None:
                    numa_fail.add(node)
                elif result >= 0:
                    feasible.add(node, result)
        dirty.clear()
        _forget_views(self.shapes[shape])

    def _decide_many(self, nodes: list[int], shape: int) -> None:
        """Filter and Score ``nodes`` (past the node-level fit) through the kernel, into the memo."""
        if not nodes:
            return
        table, tokens = self.table, self.table.tokens
        lookups: list[Lookup] = []
        for node in nodes:
            lookup = self.cache.get(self.names[node], self.shapes[shape].pod)
            lookups.append(lookup)
            if tokens[node][0] is not lookup.view or tokens[node][1] != lookup.fresh:
                table.put(node, lookup.view, lookup.fresh, self.allocatable_names[node])
        self.evaluations += len(nodes)
        verdicts = decide(self.shapes[shape], table, nodes, self.strategy)
        assert verdicts.scores is not None
        feasible, numa_fail = self._feasible[shape], self._numa_fail[shape]
        memo = self._lookups[shape]
        scores = verdicts.scores.tolist()
        for k, (node, lookup) in enumerate(zip(nodes, lookups, strict=True)):
            scored = score_lookup(self.cache, self.names[node], lookup)
            if scored is not lookup and verdicts.fits[k]:
                scores[k] = score_one(self.shapes[shape], scored, self.scorers[shape], self.cache.config.load)
        for node, lookup, fits, reason, score in zip(
            nodes, lookups, verdicts.fits.tolist(), verdicts.reasons(), scores, strict=True
        ):
            memo[node] = (fits, reason, lookup)
            if fits:
                feasible.add(node, score)
            else:
                numa_fail.add(node)

    def _report_marks(self, shape: int) -> None:
        lookups = self._lookups[shape]
        for node in sorted(self._numa_fail[shape] - self._marked):
            record_outcome(self.cache, self.names[node], *lookups[node])
            self._streak[node] += 1
            self._streaking.add(node)
            if self._streak[node] >= self.dirty_after:
                self._marked.add(node)
        feasible = self._feasible[shape]
        for node in sorted(n for n in self._streaking if n in feasible):
            record_outcome(self.cache, self.names[node], *lookups[node])
            self._streak[node] = 0
            self._streaking.discard(node)

    def _check(self, shape: int) -> None:
        feasible: dict[int, int] = {}
        failing: set[int] = set()
        for node in range(len(self.names)):
            result = self._evaluate(node, shape, reuse=False)
            if result is None:
                failing.add(node)
            elif result >= 0:
                feasible[node] = result
        if feasible != self._feasible[shape].scores or failing != self._numa_fail[shape]:
            raise VerifyError(f"memoised verdicts differ for shape {shape}")

    def decide(self, shape: int, nominated: int | None = None, held: Collection[int] = ()) -> int | None:
        """One scheduling cycle for a pod of ``shape``: the chosen node, or None (unschedulable).

        ``nominated``: the node preemption nominated the pod for, taken first when it passes
        (kube-scheduler's ``evaluateNominatedNode``); ``held``: nodes whose room a nominated pod
        of at least this pod's priority holds (the framework runs the filters with nominated pods
        added, ``RunFilterPluginsWithNominatedPods``; here such nodes are left out)."""
        self._refresh(shape)
        if self.verify:
            self._check(shape)
            _forget_views(self.shapes[shape])
        if self.report_marks:
            self._report_marks(shape)
        if nominated is not None and nominated in self._feasible[shape]:
            return nominated
        ties = self._feasible[shape].best(held)
        if not ties:
            return None
        return ties[0] if len(ties) == 1 else self.rng.choice(ties)

    def feasible_count(self, shape: int) -> int:
        return len(self._feasible[shape])

    def template(self, shape: int) -> Pod:
        return self.shapes[shape].pod
