"""The extender's ``preempt`` verb: the scheduler's victims per node, checked and completed so
that no node is nominated where the kubelet would still refuse the pod.

For every candidate node (:mod:`rte.consumer.preemption.victims`): the node's view as the reserve
cache serves it (a node the cache distrusts is dropped, as Filter would refuse it), the
scheduler's victims and the node's other pods as the pod watch knows them, where each pod holds
its resources from the :class:`~rte.consumer.preemption.placements.PlacementSource` (by default
the reserve cache's knowledge; decoded numaplacement attributes plug in the same way). A victim
the pod watch does not know (meta form, a UID we have not seen) stays a victim but gives back
nothing. PodDisruptionBudgets are not watched: pods added here count no violation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rte.consumer.cache.interface import NRTCache
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
        others = [Candidate(p, zones.get(p.key)) for p in rest]
        choice = choose_victims(prep, lookup.view, given, others)
        if choice is None:
            continue
        if learn is not None:  # their deletion then gives their zones back before the next NRT
            learn(node, {c.pod.key: c.zones for c in choice.victims if c.zones})
        out[node] = ([c.pod.uid for c in choice.victims], victims.pdb_violations + choice.pdb_violations)
    return out
