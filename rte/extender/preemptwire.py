"""kube-scheduler's preemption call to an extender, as JSON (``k8s.io/kube-scheduler/extender/v1``
``types.go``: ``ExtenderPreemptionArgs``, ``ExtenderPreemptionResult``).

The scheduler POSTs an ``ExtenderPreemptionArgs`` to ``<urlPrefix>/<preemptVerb>`` after its own
preemption chose victims per candidate node (kubernetes/kubernetes ``pkg/scheduler/extender.go``
``ProcessPreemption``):

* ``nodeCacheCapable: false``: ``NodeNameToVictims``, node -> ``{"Pods": [Pod...],
  "NumPDBViolations": n}`` with whole Pod objects;
* ``nodeCacheCapable: true``: ``NodeNameToMetaVictims``, node -> ``{"Pods": [{"UID": uid}...],
  "NumPDBViolations": n}`` (``convertToMetaVictims``).

The answer is always an ``ExtenderPreemptionResult``: ``{"NodeNameToMetaVictims": {...}}``; a
node left out is no longer a candidate, and every UID must be a pod the scheduler's cache has on
that node (``convertPodUIDToPod`` fails the whole call otherwise). As for the other verbs, keys
are matched case-insensitively like Go's decoder (old clients spelt ``nodeToVictims``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rte.errors import InputError
from rte.extender.wire import go_field
from rte.model.pod import Pod, pod_from_manifest
from rte.yamlfile import decode_json


@dataclass(frozen=True, slots=True)
class WireVictims:
    """The scheduler's victims on one node."""

    uids: tuple[str, ...]
    pods: tuple[Pod, ...] | None
    """The victims as sent (full form), or None when only their UIDs were (meta form)."""
    pdb_violations: int


@dataclass(frozen=True, slots=True)
class PreemptionArgs:
    pod: Mapping[str, Any]
    nodes: Mapping[str, WireVictims]


def _int(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(where, f"expected an integer, got {value!r}")
    return value


def _victims(value: Any, where: str, meta: bool) -> WireVictims:
    if not isinstance(value, Mapping):
        raise InputError(where, "expected an object with Pods and NumPDBViolations")
    items = go_field(value, "Pods") or []
    if not isinstance(items, list):
        raise InputError(f"{where}.Pods", "expected a list")
    pdb = _int(go_field(value, "NumPDBViolations"), f"{where}.NumPDBViolations")
    if meta:
        uids = []
        for i, item in enumerate(items):
            uid = go_field(item, "UID") if isinstance(item, Mapping) else None
            if not isinstance(uid, str) or not uid:
                raise InputError(f"{where}.Pods[{i}]", "expected a MetaPod with a UID")
            uids.append(uid)
        return WireVictims(tuple(uids), None, pdb)
    pods = tuple(pod_from_manifest(item, source=f"{where}.Pods[{i}]") for i, item in enumerate(items))
    for i, p in enumerate(pods):
        if not p.uid:
            raise InputError(f"{where}.Pods[{i}].metadata.uid", "a victim needs a UID")
    return WireVictims(tuple(p.uid for p in pods), pods, pdb)


def decode_preemption_args(body: bytes) -> PreemptionArgs:
    """Decode a request body; an :class:`InputError` names what is wrong with it."""
    obj = decode_json(body, "ExtenderPreemptionArgs")
    if not isinstance(obj, Mapping):
        raise InputError("ExtenderPreemptionArgs", f"expected a JSON object, got {type(obj).__name__}")
    pod = go_field(obj, "Pod")
    if not isinstance(pod, Mapping):
        raise InputError("ExtenderPreemptionArgs.Pod", "missing or not an object")
    nodes: dict[str, WireVictims] = {}
    for field, meta in (
        ("NodeNameToVictims", False),
        ("nodeToVictims", False),
        ("NodeNameToMetaVictims", True),
    ):
        by_node = go_field(obj, field)
        if by_node is None:
            continue
        if not isinstance(by_node, Mapping):
            raise InputError(f"ExtenderPreemptionArgs.{field}", "expected an object keyed by node name")
        for name, value in by_node.items():
            nodes[name] = _victims(value, f"ExtenderPreemptionArgs.{field}[{name}]", meta)
    return PreemptionArgs(pod, nodes)


def preemption_result(victims: Mapping[str, tuple[Sequence[str], int]]) -> dict[str, Any]:
    """An ``ExtenderPreemptionResult`` from node -> (victim UIDs, PDB violations)."""
    return {
        "NodeNameToMetaVictims": {
            node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": pdb}
            for node, (uids, pdb) in victims.items()
        }
    }
