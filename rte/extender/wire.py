"""kube-scheduler's HTTP extender wire format (``k8s.io/kube-scheduler/extender/v1``), as JSON.

The scheduler POSTs an ``ExtenderArgs`` to ``<urlPrefix>/<filterVerb>`` and
``<urlPrefix>/<prioritizeVerb>``. The Go structs carry no JSON tags, so their keys are the Go
field names: ``Pod``, ``Nodes``, ``NodeNames``; the Pod and Node objects inside are ordinary
Kubernetes JSON. Go's decoder matches keys case-insensitively, so we read them that way too
(older extender clients sent ``pod`` and ``nodes``) and always answer with the Go spelling.

* ``nodeCacheCapable: true``: the request lists names only (``NodeNames``); the filter answers
  with ``NodeNames``. The scheduler rejects a name it did not send.
* ``nodeCacheCapable: false``: the request carries whole Node objects (``Nodes``, a NodeList);
  the filter answers with the Node objects that passed (``Nodes.items``). Their
  ``status.allocatable`` feeds the "not allocatable on the node" check.

``ExtenderFilterResult``: ``Nodes``, ``NodeNames``, ``FailedNodes`` (name -> reason; preemption
may help), ``FailedAndUnresolvableNodes`` (preemption cannot help) and ``Error`` (non-empty fails
the whole call). ``HostPriorityList``: ``[{"Host": name, "Score": n}]`` with ``n`` within
``0..MaxExtenderPriority`` (10); the scheduler multiplies it by the extender's ``weight`` and by
``MaxNodeScore / MaxExtenderPriority`` (100 / 10) before adding it to its own plugin scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rte.consumer.nodescore import MAX_SCORE
from rte.errors import InputError
from rte.yamlfile import decode_json

MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


def extender_score(score: int) -> int:
    """Our 0..100 score on the extender scale 0..10, rounding **up**.

    Rounding up keeps 0 for exactly the nodes we score 0 (no NRT, stale data, another Topology
    Manager policy): the reference prefers any node with usable NRT data over one without
    (scheduler-plugins PR #685), and rounding down or to nearest would erase that preference for
    scores below 10 or 5. The price is that 91..100 all map to 10.
    """
    clamped = max(0, min(MAX_SCORE, score))
    return -(-clamped * MAX_EXTENDER_PRIORITY // MAX_SCORE)


def _field(obj: Mapping[str, Any], name: str) -> Any:
    """``obj[name]``, matching the key case-insensitively like Go's ``encoding/json``."""
    if name in obj:
        return obj[name]
    folded = name.casefold()
    for key, value in obj.items():
        if isinstance(key, str) and key.casefold() == folded:
            return value
    return None


@dataclass(frozen=True)
class ExtenderArgs:
    """A decoded ``ExtenderArgs``: the pod and the candidate nodes in either form."""

    pod: Mapping[str, Any]
    nodes: Sequence[Mapping[str, Any]] | None
    """The Node objects (``nodeCacheCapable: false``), or None when only names were sent."""
    node_names: Sequence[str] | None
    """The candidate names (``nodeCacheCapable: true``), or None when Node objects were sent."""

    def candidate_names(self) -> list[str]:
        """Every candidate's name, in request order (names first when both forms were sent)."""
        if self.node_names is not None:
            return list(self.node_names)
        return [node_name(n) for n in self.nodes or ()]


def node_name(node: Mapping[str, Any]) -> str:
    metadata = node.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) else ""


def decode_args(body: bytes) -> ExtenderArgs:
    """Decode a request body; an :class:`InputError` names what is wrong with it."""
    obj = decode_json(body, "ExtenderArgs")
    if not isinstance(obj, Mapping):
        raise InputError("ExtenderArgs", f"expected a JSON object, got {type(obj).__name__}")
    pod = _field(obj, "Pod")
    if not isinstance(pod, Mapping):
        raise InputError("ExtenderArgs.Pod", "missing or not an object")
    names = _field(obj, "NodeNames")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        raise InputError("ExtenderArgs.NodeNames", "expected a list of node names")
    node_list = _field(obj, "Nodes")
    nodes: list[Mapping[str, Any]] | None = None
    if node_list is not None:
        if not isinstance(node_list, Mapping):
            raise InputError("ExtenderArgs.Nodes", "expected a NodeList object")
        items = node_list.get("items") or []
        if not isinstance(items, list):
            raise InputError("ExtenderArgs.Nodes.items", "expected a list of Node objects")
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or not node_name(item):
                raise InputError(f"ExtenderArgs.Nodes.items[{i}]", "expected a Node object with a name")
        nodes = items
    if names is None and nodes is None:
        raise InputError("ExtenderArgs", "neither NodeNames nor Nodes is set")
    return ExtenderArgs(pod=pod, nodes=nodes, node_names=names)


def filter_result(args: ExtenderArgs, passed: Sequence[str], failed: Mapping[str, str]) -> dict[str, Any]:
    """An ``ExtenderFilterResult`` in the form(s) the request used."""
    result: dict[str, Any] = {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": dict(failed),
        "FailedAndUnresolvableNodes": {},
        "Error": "",
    }
    if args.node_names is not None:
        result["NodeNames"] = list(passed)
    if args.nodes is not None:
        keep = set(passed)
        result["Nodes"] = {"metadata": {}, "items": [n for n in args.nodes if node_name(n) in keep]}
    return result


def error_result(message: str) -> dict[str, Any]:
    """A filter result that fails the whole call (the scheduler reads ``Error``)."""
    return {
        "Nodes": None,
        "NodeNames": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": message,
    }


def host_priority(node: str, score: int) -> dict[str, Any]:
    """One ``HostPriority`` entry, ``score`` given on our 0..100 scale."""
    return {"Host": node, "Score": extender_score(score)}
