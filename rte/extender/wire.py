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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import msgspec
import orjson

from rte.consumer.kept import NAME_OVERHEAD, names_cost, too_long
from rte.consumer.nodescore import MAX_SCORE
from rte.errors import InputError
from rte.extender.wirenodes import (
    NodeList,
    NodeSpans,
    Recent,
    WireNode,
    WireNodes,
    decode_names,
    decode_nodes,
    nodes_cost,
    shared_names,
)
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

    def allocatable_by_name(self) -> Mapping[str, frozenset[str]] | None:
        """Each Node's allocatable names by the Node's name (the last of a name sent twice), or
        None without Node objects: what Filter's node-allocatable check reads. From the fast
        decoder, read off its columns (a :class:`WireNode` per Node cost eight times as long)
        and kept with the list."""
        if not self.nodes:
            return None
        if isinstance(self.nodes, WireNodes):
            return self.nodes.allocatable_by_name()
        return {n.name: n.allocatable for n in self.nodes}


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

_NULL = msgspec.Raw(b"null")


class _Args(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """An ``ExtenderArgs`` as kube-scheduler spells it; any other key (an older client's
    spelling, which Go's decoder matches case-insensitively) is left to :func:`go_field`."""

    Pod: msgspec.Raw = _NULL
    Nodes: NodeSpans | None = None
    NodeNames: msgspec.Raw = _NULL


class _ArgsNodes(msgspec.Struct, gc=False):
    """The second pass over an ``ExtenderArgs`` spelt as :class:`_Args`: what Filter reads."""

    Nodes: NodeList | None = None


_ARGS = msgspec.json.Decoder(_Args)
_ARGS_NODES = msgspec.json.Decoder(_ArgsNodes)
_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_NODE_SPANS = msgspec.json.Decoder(NodeSpans | None)
_NODE_LIST = msgspec.json.Decoder(NodeList | None)
_NAME = attrgetter("name")
_BODIES = Recent(1)
"""The last request's arguments, by its body: prioritize sends filter's very body when every
candidate passed (in whole-Node mode megabytes of it)."""


def _decode_fast(body: bytes) -> ExtenderArgs | None:
    """The arguments, reading only what is used, or None to leave the request to
    :func:`_decode_whole`: on anything unusual (invalid JSON, a field of an unexpected type, a
    Node without a name), so that the answer and every error are exactly its.
    """
    known: ExtenderArgs | None = _BODIES.get(body)
    if known is not None:
        return known
    if not body.isascii():
        try:
            body.decode("utf-8")  # msgspec passes over the strings it skips unchecked
        except UnicodeDecodeError:
            return None
    try:
        pod_raw, names_raw, spans, read_nodes = _fields(body)
        pod_json = bytes(pod_raw)
        pod = decode_json(pod_json, "ExtenderArgs.Pod")
        names = decode_names(bytes(names_raw))
        nodes = None
        if spans is not None:
            nodes = decode_nodes(spans, read_nodes)
            if nodes is None:
                return None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, InputError):
        return None
    if not isinstance(pod, Mapping) or (names is None and nodes is None):
        return None
    args = ExtenderArgs(pod=pod, nodes=nodes, node_names=names, pod_json=pod_json)
    _BODIES.keep(body, args, _args_cost(args))
    return args


def _args_cost(args: ExtenderArgs) -> int:
    """What a kept request's arguments hold besides its body (the decoded pod: some ten times
    its JSON; the lists, shared with their own memos, counted again): over
    :data:`~rte.consumer.kept.LIST_BYTES_KEPT`, the request is not remembered."""
    cost = 10 * len(args.pod_json or b"")
    names = args.node_names
    if names is not None:
        cost += len(names) * NAME_OVERHEAD if too_long(names) else names_cost(names)
    return cost + nodes_cost(args.nodes if isinstance(args.nodes, WireNodes) else None)


def _fields(
    body: bytes,
) -> tuple[msgspec.Raw, msgspec.Raw, list[msgspec.Raw] | None, Callable[[], list[Any]]]:
    """The Pod's and the NodeNames' JSON (``null`` when absent), the Nodes' items' (None
    without Nodes), in one pass over the body when its keys are spelt as Go spells them; and
    how to read what Filter reads of the Nodes (a second pass, made only for a list not seen
    lately: see :func:`rte.extender.wirenodes.decode_nodes`)."""
    try:
        args = _ARGS.decode(body)
        spans = None if args.Nodes is None else args.Nodes.items or []
        return args.Pod, args.NodeNames, spans, lambda: _items(_ARGS_NODES.decode(body).Nodes)
    except msgspec.ValidationError:
        pass
    top = _OBJECT.decode(body)
    pod, names, nodes = (go_field(top, k) for k in ("Pod", "NodeNames", "Nodes"))
    node_list = None if nodes is None else _NODE_SPANS.decode(nodes)
    spans = None if node_list is None else node_list.items or []
    return (
        _NULL if pod is None else pod,
        _NULL if names is None else names,
        spans,
        lambda: _items(_NODE_LIST.decode(nodes)),
    )


def _items(node_list: NodeList | None) -> list[Any]:
    return [] if node_list is None or node_list.items is None else node_list.items


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
        items: Any
        if isinstance(nodes, WireNodes):  # as sent
            items = orjson.Fragment(nodes.echo_text(keep))
        else:
            items = [n.echo for n in nodes if n.name in keep]
        result["Nodes"] = {"metadata": {}, "items": items}
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


_ON_EXTENDER_SCALE = [extender_score(s) for s in range(MAX_SCORE + 1)]


def host_priorities(scores: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """A ``HostPriorityList``: :func:`host_priority` of each ``(node, score)``, by table lookup
    (a call per node was a tenth of prioritize's time at 5000 candidates)."""
    table = _ON_EXTENDER_SCALE
    return [
        {"Host": node, "Score": table[score] if 0 <= score <= MAX_SCORE else extender_score(score)}
        for node, score in scores
    ]
