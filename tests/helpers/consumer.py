"""Small builders for consumer tests: NRTs, views and pods written as plain dicts."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rte.consumer.filter import FilterResult, filter_node
from rte.consumer.numaview import NumaView, build_view
from rte.consumer.requests import PreparedPod, prepare_pod
from rte.consumer.score import DEFAULT_STRATEGY, ScoringStrategy, score_node
from rte.model.pod import Container, Pod
from rte.model.quantity import Amount, parse_quantity
from rte.model.topology import Attribute, Cost, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import Compat

Quantities = Mapping[str, str | int]


def slit(ids: Sequence[int], remote: int = 20) -> dict[int, dict[int, int]]:
    """A distance table: 10 to itself, ``remote`` to every other zone."""
    return {i: {j: 10 if i == j else remote for j in ids} for i in ids}


def topology(
    zones: Mapping[int | str, Quantities],
    *,
    policy: str | None = "single-numa-node",
    scope: str | None = "container",
    costs: Mapping[int, Mapping[int, int]] | None = None,
    max_numa: str | None = None,
    name: str = "n1",
) -> NodeTopology:
    """Zones keyed by NUMA id (or by a literal zone name), in the order given (= published order)."""
    out = []
    for key, resources in zones.items():
        zone_name = f"node-{key}" if isinstance(key, int) else key
        zone_costs = ()
        if costs is not None and isinstance(key, int):
            zone_costs = tuple(Cost(f"node-{j}", v) for j, v in costs.get(key, {}).items())
        out.append(
            Zone(
                name=zone_name,
                costs=zone_costs,
                resources=tuple(
                    ResourceInfo(r, parse_quantity(q), parse_quantity(q), parse_quantity(q))
                    for r, q in resources.items()
                ),
            )
        )
    attrs = []
    if policy is not None:
        attrs.append(Attribute("topologyManagerPolicy", policy))
    if scope is not None:
        attrs.append(Attribute("topologyManagerScope", scope))
    if max_numa is not None:
        attrs.append(Attribute("topologyManagerMaxNUMANodes", max_numa))
    return NodeTopology(name=name, zones=tuple(out), attributes=tuple(attrs))


def view(zones: Mapping[int | str, Quantities], **kwargs: object) -> NumaView:
    return build_view(topology(zones, **kwargs))  # type: ignore[arg-type]


def _parsed(q: Quantities) -> dict[str, Amount]:
    return {r: parse_quantity(v) for r, v in q.items()}


def container(
    name: str, requests: Quantities, *, guaranteed: bool = True, sidecar: bool = False
) -> Container:
    """A container whose limits equal its requests (Guaranteed when cpu and memory are set)."""
    req = _parsed(requests)
    return Container(
        name=name,
        requests=req,
        limits=req if guaranteed else {},
        restart_policy="Always" if sidecar else None,
    )


def pod(
    *containers: Container,
    init: Sequence[Container] = (),
    overhead: Quantities | None = None,
    qos: str = "",
) -> Pod:
    return Pod(
        namespace="ns",
        name="p",
        containers=tuple(containers),
        init_containers=tuple(init),
        overhead=_parsed(overhead or {}),
        status_qos_class=qos,
    )


GI = 2**30


def as_reference(p: Pod | PreparedPod) -> PreparedPod:
    """``p`` prepared for the reference plugin's rules (``Compat.REFERENCE``)."""
    if isinstance(p, PreparedPod):
        assert p.reference, "a pod prepared for the kubelet's rules"
        return p
    return prepare_pod(p, compat=Compat.REFERENCE)


def reference_filter(
    p: Pod | PreparedPod,
    node_view: NumaView | None,
    allocatable: Collection[str] | None = None,
    *,
    fresh: bool = True,
) -> FilterResult:
    """Filter by the reference plugin's rules: the modules that pin those rules call this."""
    return filter_node(as_reference(p), node_view, allocatable, fresh=fresh)


def reference_score(
    p: Pod | PreparedPod,
    node_view: NumaView | None,
    strategy: ScoringStrategy = DEFAULT_STRATEGY,
    *,
    fresh: bool = True,
) -> int:
    """Score by the reference plugin's rules."""
    return score_node(as_reference(p), node_view, strategy, fresh=fresh)
