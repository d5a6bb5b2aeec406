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
from itertools import compress
from operator import attrgetter
from typing import Any

import msgspec
import orjson

from rte.consumer.nodescore import MAX_SCORE
from rte.errors import InputError
from rte.extender.wirenodes import WireNode, WireNodes, decode_names, decode_nodes, shared_names
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


def go_field(obj: Mapping[str, Any], name: str) -> Any:
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
    nodes: Sequence[WireNode] | None
    """The Node objects (``nodeCacheCapable: false``), or None when only names were sent."""
    node_names: Sequence[str] | None
    """The candidate names (``nodeCacheCapable: true``), or None when Node objects were sent.
    From the fast decoder, a tuple shared by every request that sent the same list (see
    :func:`rte.extender.wirenodes.decode_names`)."""
    pod_json: bytes | None = None
    """The Pod's JSON as sent (fast decoder only): a key under which the service remembers the
    pod prepared, since filter and prioritize send the same pod."""

    def candidate_names(self) -> Sequence[str]:
        """Every candidate's name, in request order (names first when both forms were sent).

        A tuple given by the decoder is returned as is, and the names of Node objects as a tuple
        shared with equal lists sent lately: the kernel's mirror remembers a tuple's rows by
        identity, so a list sent again costs nothing per name.
        """
        if isinstance(self.node_names, tuple):
            return self.node_names
        if self.node_names is not None:
            return list(self.node_names)
        if isinstance(self.nodes, WireNodes):
            return self.nodes.names
        return shared_names(list(map(_NAME, self.nodes or ())))


def node_name(node: Mapping[str, Any]) -> str:
    metadata = node.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) else ""


def allocatable_names(node: Mapping[str, Any]) -> frozenset[str]:
    status = node.get("status")
    allocatable = status.get("allocatable") if isinstance(status, Mapping) else None
    return frozenset(allocatable) if isinstance(allocatable, Mapping) else frozenset()


def decode_args(body: bytes) -> ExtenderArgs:
    """Decode a request body; an :class:`InputError` names what is wrong with it.

    Well-formed requests go through :func:`_decode_fast`, which reads only the fields used;
    anything it does not take is decoded whole, with the same result.
    """
    fast = _decode_fast(body)
    return fast if fast is not None else _decode_whole(body)


# --- the fast decoder (rte.extender.wirenodes reads the lists) --------------------------------

_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_NAME = attrgetter("name")


def _decode_fast(body: bytes) -> ExtenderArgs | None:
    """The arguments, reading only what is used, or None to leave the request to
    :func:`_decode_whole`: on anything unusual (invalid JSON, a field of an unexpected type, a
    Node without a name), so that the answer and every error are exactly its.
    """
    if not body.isascii():
        try:
            body.decode("utf-8")  # msgspec passes over the strings it skips unchecked
        except UnicodeDecodeError:
            return None
    try:
        top = _OBJECT.decode(body)
        pod_raw, names_raw, nodes_raw = (go_field(top, k) for k in ("Pod", "NodeNames", "Nodes"))
        if pod_raw is None:
            return None
        pod_json = bytes(pod_raw)
        pod = decode_json(pod_json, "ExtenderArgs.Pod")
        names = None if names_raw is None else decode_names(bytes(names_raw))
        nodes = None
        if nodes_raw is not None and not (len(nodes_raw) == 4 and bytes(nodes_raw) == b"null"):
            nodes = decode_nodes(nodes_raw)
            if nodes is None:
                return None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, InputError):
        return None
    if not isinstance(pod, Mapping) or (names is None and nodes is None):
        return None
    return ExtenderArgs(pod=pod, nodes=nodes, node_names=names, pod_json=pod_json)


def _decode_whole(body: bytes) -> ExtenderArgs:
    obj = decode_json(body, "ExtenderArgs")
    if not isinstance(obj, Mapping):
        raise InputError("ExtenderArgs", f"expected a JSON object, got {type(obj).__name__}")
    pod = go_field(obj, "Pod")
    if not isinstance(pod, Mapping):
        raise InputError("ExtenderArgs.Pod", "missing or not an object")
    names = go_field(obj, "NodeNames")
    if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
        raise InputError("ExtenderArgs.NodeNames", "expected a list of node names")
    if names is not None:
        names = tuple(names)  # as the fast decoder gives them
    node_list = go_field(obj, "Nodes")
    nodes: list[WireNode] | None = None
    if node_list is not None:
        if not isinstance(node_list, Mapping):
            raise InputError("ExtenderArgs.Nodes", "expected a NodeList object")
        items = node_list.get("items") or []
        if not isinstance(items, list):
            raise InputError("ExtenderArgs.Nodes.items", "expected a list of Node objects")
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or not node_name(item):
                raise InputError(f"ExtenderArgs.Nodes.items[{i}]", "expected a Node object with a name")
        nodes = [WireNode(node_name(n), allocatable_names(n), n) for n in items]
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
        nodes = args.nodes
        if isinstance(nodes, WireNodes):
            echoes = list(compress(nodes.echoes, map(keep.__contains__, nodes.names)))
        else:
            echoes = [n.echo for n in nodes if n.name in keep]
        items: Any = echoes
        if set(map(type, echoes)) <= {msgspec.Raw}:  # as sent, between the list's brackets
            items = orjson.Fragment(_json_list(echoes))
        result["Nodes"] = {"metadata": {}, "items": items}
    return result


def _json_list(texts: list[Any]) -> bytes:
    """``[a,b,...]`` of JSON texts, built in one piece: adding the brackets to a joined answer of
    megabytes afterwards (two more copies of it, into fresh memory) cost 5-10 ms at 5000 Nodes."""
    if not texts:
        return b"[]"
    parts = [b","] * (2 * len(texts) + 1)
    parts[0], parts[-1] = b"[", b"]"
    parts[1::2] = texts
    return b"".join(parts)


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


_ON_EXTENDER_SCALE = [extender_score(s) for s in range(MAX_SCORE + 1)]


def host_priorities(scores: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """A ``HostPriorityList``: :func:`host_priority` of each ``(node, score)``, by table lookup
    (a call per node was a tenth of prioritize's time at 5000 candidates)."""
    table = _ON_EXTENDER_SCALE
    return [
        {"Host": node, "Score": table[score] if 0 <= score <= MAX_SCORE else extender_score(score)}
        for node, score in scores
    ]
