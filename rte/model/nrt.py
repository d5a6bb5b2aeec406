"""NodeResourceTopology objects (plain JSON-able dicts) to and from the zone model.

We write ``topology.node.k8s.io/v1alpha2`` (the storage version, the only one the reference
consumer reads) and read both v1alpha2 and v1alpha1. Output is canonical (see
:mod:`rte.model.topology`) and quantities are plain base-unit integer strings, so the same state
always yields the same bytes.

Reading is strict about structure and names the offending field in a :class:`InputError`
(``zones[1].resources[0].available: not a quantity: '12xyz'``), because a consumer must never act
on a half-understood object.

Negative quantities pass the CRD's schema, but no producer may write one and consumers treat one
as 0. So does :func:`from_nrt` for objects from a cluster (one warning naming the fields), while
``strict`` reading, for files a user hands us, refuses them like any other malformed value.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rte.errors import InputError
from rte.model.quantity import parse_quantity, quantity_text
from rte.model.topology import (
    Attribute,
    Cost,
    NodeTopology,
    OwnerReference,
    ResourceInfo,
    Zone,
)

GROUP = "topology.node.k8s.io"
KIND = "NodeResourceTopology"
LIST_KIND = "NodeResourceTopologyList"
PLURAL = "noderesourcetopologies"
VERSION = "v1alpha2"
READABLE_VERSIONS = ("v1alpha2", "v1alpha1")
API_VERSION = f"{GROUP}/{VERSION}"

log = logging.getLogger(__name__)


def _attributes_out(attributes: Sequence[Attribute]) -> list[dict[str, str]]:
    return [{"name": a.name, "value": a.value} for a in attributes]


def _zone_out(zone: Zone) -> dict[str, Any]:
    out: dict[str, Any] = {"name": zone.name, "type": zone.type}
    if zone.parent:
        out["parent"] = zone.parent
    if zone.costs:
        out["costs"] = [{"name": c.name, "value": c.value} for c in zone.costs]
    if zone.attributes:
        out["attributes"] = _attributes_out(zone.attributes)
    if zone.resources:
        out["resources"] = [
            {
                "name": r.name,
                "capacity": quantity_text(r.capacity),
                "allocatable": quantity_text(r.allocatable),
                "available": quantity_text(r.available),
            }
            for r in zone.resources
        ]
    return out


def to_nrt(topology: NodeTopology) -> dict[str, Any]:
    """The v1alpha2 object for ``topology``, in canonical order, ready to send to the apiserver."""
    topo = topology.canonical()
    metadata: dict[str, Any] = {"name": topo.name}
    if topo.labels:
        metadata["labels"] = dict(topo.labels)
    if topo.annotations:
        metadata["annotations"] = dict(topo.annotations)
    if topo.owner_references:
        metadata["ownerReferences"] = [
            {"apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": o.uid}
            for o in topo.owner_references
        ]
    obj: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata}
    if topo.topology_policies:
        obj["topologyPolicies"] = list(topo.topology_policies)
    if topo.attributes:
        obj["attributes"] = _attributes_out(topo.attributes)
    obj["zones"] = [_zone_out(z) for z in topo.zones]  # always a list, never null
    return obj


# --- reading -------------------------------------------------------------------------------


def _require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj or obj[key] is None:
        raise InputError(f"{where}.{key}" if where else key, "required field is missing")
    return obj[key]


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(where, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise InputError(where, f"expected a list, got {type(value).__name__}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(where, f"expected a string, got {value!r}")
    return value


def _attributes_in(value: Any, where: str) -> tuple[Attribute, ...]:
    out = []
    for i, item in enumerate(_list(value, where)):
        at = f"{where}[{i}]"
        item = _mapping(item, at)
        out.append(
            Attribute(
                _string(_require(item, "name", at), f"{at}.name"),
                _string(_require(item, "value", at), f"{at}.value"),
            )
        )
    return tuple(out)


class _Negatives:
    """What to do with a negative quantity: refuse it (strict) or read it as 0 and remember where."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.seen: list[str] = []

    def quantity(self, item: Mapping[str, Any], key: str, where: str) -> Any:
        raw = _require(item, key, where)
        try:
            value = parse_quantity(raw)
        except ValueError as e:
            raise InputError(f"{where}.{key}", str(e)) from e
        if value < 0:
            if self.strict:
                raise InputError(f"{where}.{key}", f"negative quantity {raw!r}: an NRT never holds one")
            self.seen.append(f"{where}.{key}={raw}")
            return 0
        return value


def _zone_in(value: Any, where: str, negatives: _Negatives) -> Zone:
    obj = _mapping(value, where)
    costs = []
    for i, item in enumerate(_list(obj.get("costs"), f"{where}.costs")):
        at = f"{where}.costs[{i}]"
        item = _mapping(item, at)
        cost = _require(item, "value", at)
        if isinstance(cost, bool) or not isinstance(cost, int):
            raise InputError(f"{at}.value", f"expected an integer, got {cost!r}")
        costs.append(Cost(_string(_require(item, "name", at), f"{at}.name"), cost))
    resources = []
    for i, item in enumerate(_list(obj.get("resources"), f"{where}.resources")):
        at = f"{where}.resources[{i}]"
        item = _mapping(item, at)
        resources.append(
            ResourceInfo(
                name=_string(_require(item, "name", at), f"{at}.name"),
                capacity=negatives.quantity(item, "capacity", at),
                allocatable=negatives.quantity(item, "allocatable", at),
                available=negatives.quantity(item, "available", at),
            )
        )
    parent = obj.get("parent")
    return Zone(
        name=_string(_require(obj, "name", where), f"{where}.name"),
        type=_string(_require(obj, "type", where), f"{where}.type"),
        parent=_string(parent, f"{where}.parent") if parent else None,
        costs=tuple(costs),
        attributes=_attributes_in(obj.get("attributes"), f"{where}.attributes"),
        resources=tuple(resources),
    )


def _string_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    obj = _mapping(value, where)
    return {str(k): _string(v, f"{where}.{k}") for k, v in obj.items()}


def check_topology(topology: NodeTopology) -> NodeTopology:
    """Refuse an NRT no agent can have published truthfully; return it unchanged otherwise.

    * Two zones of the same name: every reader keys zones by name (the consumer's NUMA id comes
      from it), so one of them would silently hide the other.
    * A resource whose ``available`` exceeds its ``allocatable``: free can never be more than
      what pods may be given (the kubelet's accounting subtracts from allocatable); read as is,
      a pod would "fit" on resources the node does not have.
    """
    seen: dict[str, int] = {}
    for i, zone in enumerate(topology.zones):
        first = seen.setdefault(zone.name, i)
        if first != i:
            raise InputError(
                f"zones[{i}].name", f"zone {zone.name!r} is also zones[{first}]: zone names are unique"
            )
        for j, res in enumerate(zone.resources):
            if res.available > res.allocatable:
                raise InputError(
                    f"zones[{i}].resources[{j}].available",
                    f"{res.name} available {res.available} exceeds allocatable {res.allocatable}",
                )
    return topology


def from_nrt(obj: Mapping[str, Any], *, strict: bool = False) -> NodeTopology:
    """Read a v1alpha2 or v1alpha1 NRT object (as decoded JSON/YAML) into the zone model.

    The published order of every list is preserved: the reference consumer's decisions depend
    on zone order, so reading must not hide it. Use :meth:`NodeTopology.canonical` to sort.
    A negative quantity reads as 0 with a warning, or with ``strict`` is an :class:`InputError`;
    an impossible NRT (:func:`check_topology`) is an :class:`InputError`.
    """
    obj = _mapping(obj, "object")
    api_version = obj.get("apiVersion")
    if api_version is not None:
        group, _, version = str(api_version).partition("/")
        if group != GROUP or version not in READABLE_VERSIONS:
            raise InputError("apiVersion", f"not a NodeResourceTopology version we read: {api_version!r}")
    kind = obj.get("kind")
    if kind is not None and kind != KIND:
        raise InputError("kind", f"expected {KIND}, got {kind!r}")
    metadata = _mapping(_require(obj, "metadata", ""), "metadata")
    owners = []
    for i, item in enumerate(_list(metadata.get("ownerReferences"), "metadata.ownerReferences")):
        at = f"metadata.ownerReferences[{i}]"
        item = _mapping(item, at)
        owners.append(
            OwnerReference(
                api_version=_string(item.get("apiVersion", ""), f"{at}.apiVersion"),
                kind=_string(item.get("kind", ""), f"{at}.kind"),
                name=_string(item.get("name", ""), f"{at}.name"),
                uid=_string(item.get("uid", ""), f"{at}.uid"),
            )
        )
    policies = tuple(
        _string(p, f"topologyPolicies[{i}]")
        for i, p in enumerate(_list(obj.get("topologyPolicies"), "topologyPolicies"))
    )
    name = _string(_require(metadata, "name", "metadata"), "metadata.name")
    negatives = _Negatives(strict)
    zones = tuple(
        _zone_in(z, f"zones[{i}]", negatives) for i, z in enumerate(_list(obj.get("zones"), "zones"))
    )
    if negatives.seen:
        log.warning("NRT %s: negative quantities read as 0: %s", name, ", ".join(negatives.seen))
    # v1alpha1 has no top-level attributes; tolerate their absence either way.
    topology = NodeTopology(
        name=name,
        zones=zones,
        attributes=_attributes_in(obj.get("attributes"), "attributes"),
        topology_policies=policies,
        annotations=_string_map(metadata.get("annotations"), "metadata.annotations"),
        labels=_string_map(metadata.get("labels"), "metadata.labels"),
        owner_references=tuple(owners),
    )
    return check_topology(topology)
