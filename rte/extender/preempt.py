"""The extender's ``preempt`` verb: the scheduler's victims per node, checked and completed so
that no node is nominated where the kubelet would still refuse the pod.

For every candidate node (:mod:`rte.consumer.preemption.victims`): the node's view as the reserve
cache serves it (a node the cache distrusts is dropped, as Filter would refuse it), the
scheduler's victims and the node's other pods as the pod watch knows them, where each pod holds
its resources from the :class:`~rte.consumer.preemption.placements.PlacementSource` (by default
the reserve cache's knowledge; decoded numaplacement attributes plug in the same way). A victim
the pod watch does not know (meta form, a UID we have not seen) stays a victim but gives back
nothing.

PodDisruptionBudgets (:mod:`rte.consumer.preemption.pdb`, from the extender's PDB watch): each
pod the verb may add is marked violating when one more eviction among the pods its PDBs select,
after the scheduler's victims, takes a budget below zero, so the victim choice prefers sets that
violate none; the answer's ``NumPDBViolations`` is the scheduler's count plus the added pods'
violations, counted over the chosen set in order as kube-scheduler's ``filterPodsWithPDBViolation``
(``pkg/scheduler/framework/preemption/preemption.go``) counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rte.consumer.cache.interface import NRTCache
from rte.consumer.preemption.pdb import Budget, pdb_violations
from rte.consumer.preemption.placements import PlacementSource
from rte.consumer.preemption.victims import Candidate, choose_victims
from rte.consumer.requests import PreparedPod
from rte.extender.preemptwire import PreemptionArgs, WireVictims
from rte.model.pod import Pod

NodeVictims = Mapping[str, tuple[Sequence[str], int]]
"""Node -> (victim UIDs, PDB violations): what the answer names."""


def _victim_pods(victims: WireVictims, by_uid: Mapping[str, Pod], node: str) -> list[Pod]:
    if victims.pods is not None:
        return list(victims.pods)
    # A UID we have not seen: a stand-in that carries it (credited nothing, named in the answer).
    return [
        by_uid.get(uid) or Pod(namespace="", name=f"uid:{uid}", uid=uid, node_name=node)
        for uid in victims.uids
    ]


def preempt_nodes(
    prep: PreparedPod,
    args: PreemptionArgs,
    cache: NRTCache,
    pods: Iterable[Pod],
    placements: PlacementSource,
    budgets: Mapping[str, Sequence[Budget]] | None = None,
) -> dict[str, tuple[list[str], int]]:
    """The nodes kept and their victims (see the module docstring)."""
    by_uid: dict[str, Pod] = {}
    by_node: dict[str, list[Pod]] = {}
    preemptor = prep.pod
    for p in pods:
        if p.uid:
            by_uid[p.uid] = p
        if p.node_name and not p.is_terminal and p.key != preemptor.key and p.uid:
            by_node.setdefault(p.node_name, []).append(p)
    out: dict[str, tuple[list[str], int]] = {}
    learn = getattr(cache, "learn_zones", None)
    for node, victims in args.nodes.items():
        lookup = cache.get(node, preemptor)
        if not lookup.fresh:
            continue
        given_pods = _victim_pods(victims, by_uid, node)
        taken = set(victims.uids)
        rest = [p for p in by_node.get(node, ()) if p.uid not in taken and p.priority < preemptor.priority]
        zones = placements.pod_zones(node, [*given_pods, *rest])
        given = [Candidate(p, zones.get(p.key)) for p in given_pods]
        local = _budgets_of([*given_pods, *rest], budgets or {})
        flags = _alone_violates(given_pods, rest, local)
        others = [Candidate(p, zones.get(p.key), violated) for p, violated in zip(rest, flags, strict=True)]
        choice = choose_victims(prep, lookup.view, given, others)
        if choice is None:
            continue
        added = _added_violations(given_pods, [c.pod for c in choice.added], local)
        if learn is not None:  # their deletion then gives their zones back before the next NRT
            learn(node, {c.pod.key: c.zones for c in choice.victims if c.zones})
        out[node] = ([c.pod.uid for c in choice.victims], victims.pdb_violations + added)
    return out


def _budgets_of(pods: Iterable[Pod], budgets: Mapping[str, Sequence[Budget]]) -> list[Budget]:
    """The budgets of the namespaces of ``pods`` (``budgets``: namespace -> its budgets)."""
    return [b for ns in sorted({p.namespace for p in pods}) for b in budgets.get(ns, ())]


def _labelled(pods: Iterable[Pod]) -> list[tuple[str, str, Mapping[str, str]]]:
    return [(p.namespace, p.name, p.labels) for p in pods]


def _alone_violates(given: Sequence[Pod], rest: Sequence[Pod], budgets: Sequence[Budget]) -> list[bool]:
    """For each of ``rest``: whether evicting it with the scheduler's victims alone violates a
    budget (the scheduler's victims take from the budgets first; their own violations are the
    scheduler's count)."""
    if not budgets:
        return [False] * len(rest)
    head = _labelled(given)
    return [pdb_violations([*head, *_labelled([p])], budgets)[-1] for p in rest]


def _added_violations(given: Sequence[Pod], added: Sequence[Pod], budgets: Sequence[Budget]) -> int:
    """The violations of the pods added, evicted after the scheduler's victims, in order."""
    if not budgets or not added:
        return 0
    return sum(pdb_violations(_labelled([*given, *added]), budgets)[len(given) :])
