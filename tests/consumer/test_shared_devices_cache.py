"""The reserve cache on a node with a device attached to two NUMA zones (issue #23 item 6).

The reserved pod takes the one GPU shared by zones 0 and 1 (``nodeMultiNUMAResources``
``example.com/gpu:0-1=1/1``); the kubelet (devicemanager ``generateDeviceTopologyHints``) then
sees no free GPU for any mask, so a second pod asking one must be refused on both zones. Charging
the reservation to the zone the model chose alone would leave zone 1 counting a GPU that the
stale group count can no longer explain, read as zone 1's own: a TopologyAffinityError.
"""

from __future__ import annotations

from dataclasses import replace

from rte.consumer.filter import filter_node
from rte.consumer.store import MODIFIED
from rte.model import fingerprint as fp
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod
from tests.consumer.test_reconcile import GIB, cache_with, pod, running

GPU = "example.com/gpu"


def _nrt(shared: bool) -> NodeTopology:
    zones = tuple(
        Zone(
            f"node-{z}",
            resources=(
                ResourceInfo("cpu", 4, 4, 4),
                ResourceInfo("memory", 16 * GIB, 16 * GIB, 16 * GIB),
                ResourceInfo(GPU, 1, 1, 1),  # the shared GPU, counted in each of its zones
            ),
        )
        for z in (0, 1)
    )
    attributes = [
        Attribute("topologyManagerPolicy", "restricted"),
        Attribute("topologyManagerScope", "container"),
        Attribute(fp.ATTRIBUTE, fp.compute([])),  # history mode: the cache predicts zones
        Attribute(fp.ATTRIBUTE_METHOD, FingerprintMethod.ALL.value),
    ]
    if shared:
        attributes.append(Attribute("nodeMultiNUMAResources", f"{GPU}:0-1=1/1"))
    return NodeTopology(name="n1", zones=zones, attributes=tuple(attributes))


def _gpu_pod(name: str):  # type: ignore[no-untyped-def]
    base = pod(name, 1)
    (container,) = base.containers
    requests = {**container.requests, GPU: 1}
    return replace(base, containers=(replace(container, requests=requests, limits=dict(requests)),))


def test_a_reserved_shared_device_leaves_every_zone_it_spans() -> None:
    _, cache = cache_with(_nrt(shared=True))
    assert filter_node(_gpu_pod("p1"), cache.get("n1").view).fits
    first = _gpu_pod("p1")
    cache.reserve("n1", first)
    cache.on_pod_event(MODIFIED, running(first))  # admitted: the cache may charge its zone only
    view = cache.get("n1").view
    assert tuple(view.available[GPU]) == (0, 0)
    assert not filter_node(_gpu_pod("p2"), view).fits
