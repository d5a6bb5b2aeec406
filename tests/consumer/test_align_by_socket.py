"""Filter on an NRT that carries ``align-by-socket`` and the zones' sockets, end to end from the
published attributes (kubernetes/kubernetes ``pkg/kubelet/cm/cpumanager/policy_static.go``
``generateCPUTopologyHints``: ``AlignBySocket && isHintSocketAligned`` makes a hint preferred,
so ``restricted`` admits a two-zone mask within one socket)."""

from __future__ import annotations

import pytest

from rte.consumer.cache.predict import predicted_charge
from rte.consumer.filter import filter_node
from rte.consumer.lowerbound import mark_lower_bound
from rte.consumer.numaview import build_view
from rte.consumer.requests import prepare_pod
from rte.model.topology import Attribute, NodeTopology, ResourceInfo, Zone
from tests.helpers.consumer import GI, container, pod


def _nrt(attrs: dict[str, str]) -> NodeTopology:
    free = (2, 2, 0, 0)  # zones 0 and 1 (socket 0) have 2 of 4 CPUs free each
    zones = tuple(
        Zone(
            f"node-{i}",
            resources=(ResourceInfo("cpu", 4, 4, f), ResourceInfo("memory", 8 * GI, 8 * GI, 8 * GI)),
        )
        for i, f in enumerate(free)
    )
    base = {"topologyManagerPolicy": "restricted", "topologyManagerScope": "container"}
    base["memoryManagerPolicy"] = "None"
    return NodeTopology(
        "n", zones=zones, attributes=tuple(Attribute(k, v) for k, v in {**base, **attrs}.items())
    )


@pytest.mark.parametrize(
    ("attrs", "fits"),
    [
        ({"cpuManagerOptionAlignBySocket": "true", "cpuManagerNUMASockets": "0=0;1=0;2=1;3=1"}, True),
        # Zones 0 and 1 on different sockets: {0,1} spans two where one would do.
        ({"cpuManagerOptionAlignBySocket": "true", "cpuManagerNUMASockets": "0=0;1=1;2=0;3=1"}, False),
        ({"cpuManagerOptionAlignBySocket": "false", "cpuManagerNUMASockets": "0=0;1=0;2=1;3=1"}, False),
        # An NRT from an agent that does not publish the sockets: the width rule only.
        ({"cpuManagerOptionAlignBySocket": "true"}, False),
    ],
)
def test_restricted_admits_a_socket_aligned_two_zone_mask_only_when_the_nrt_says_so(
    attrs: dict[str, str], fits: bool
) -> None:
    prep = prepare_pod(pod(container("c", {"cpu": 3, "memory": GI}, guaranteed=True)))
    result = filter_node(prep, build_view(_nrt(attrs)), None, fresh=True)
    assert result.fits is fits, result.reason


def _busy_socket(align: str) -> NodeTopology:
    """Socket 0 = zones 0 (3 of 8 CPUs free) and 1 (8 free); single-thread cores."""
    zones = tuple(
        Zone(
            f"node-{i}",
            resources=(ResourceInfo("cpu", 8, 8, f), ResourceInfo("memory", 8 * GI, 8 * GI, 8 * GI)),
        )
        for i, f in enumerate((3, 8, 8, 8))
    )
    attrs = {
        "topologyManagerPolicy": "restricted",
        "topologyManagerScope": "container",
        "cpuManagerThreadsPerCore": "1",
        "cpuManagerNUMASockets": "0=0;1=0;2=1;3=1",
        "cpuManagerOptionAlignBySocket": align,
    }
    return NodeTopology("n", zones=zones, attributes=tuple(Attribute(k, v) for k, v in attrs.items()))


def test_the_reserve_cache_predicts_no_zone_when_the_socket_may_give_the_cpus() -> None:
    """``getAlignedCPUs``: the hint {0} stands for zones 0 and 1. On this view zone 0 has fewer
    free CPUs and gives them, but on the node (which may have more room than the view) zone 1 may
    have fewer by then and give them: charging zone 0 alone could leave zone 1 overstated, so the
    pod is charged on every zone, as without a prediction."""
    p = pod(container("c", {"cpu": 2, "memory": GI}, guaranteed=True))
    assert predicted_charge(build_view(_busy_socket("false")), p) == {0: {"cpu": 2, "memory": GI}}
    assert predicted_charge(build_view(_busy_socket("true")), p) is None


NIC = "example.com/nic"


def test_a_lower_bound_view_charges_packed_splits_on_every_zone_they_may_touch() -> None:
    """The reserve cache's view only bounds the kubelet from below. Zone 0 (5 of 8 CPUs free, the
    only NIC) and zone 1 (3 of 8) share socket 0. c0 (2 CPUs) is hinted {0}; ``getAlignedCPUs``
    widens it to the socket and on this view the packed order takes zone 1's CPUs (fewer free),
    leaving zone 0 the 5 CPUs and the NIC c1 wants. On the node, zone 1 may have freed up to 8
    by then: zone 0 then has fewer free and gives c0's CPUs, c1 finds 3 CPUs on zone 0 and, on
    {0,1}, a non-preferred NIC hint: ``restricted`` refuses. So on a lower bound the split is
    charged to both zones and the pod is refused; on an exact view it is admitted."""
    zones = tuple(
        Zone(
            f"node-{i}",
            resources=(
                ResourceInfo("cpu", 8, 8, free),
                ResourceInfo("memory", 8 * GI, 8 * GI, 8 * GI),
                ResourceInfo(NIC, nic, nic, nic),
            ),
        )
        for i, (free, nic) in enumerate(((5, 1), (3, 0), (0, 0), (0, 0)))
    )
    attrs = {
        "topologyManagerPolicy": "restricted",
        "topologyManagerScope": "container",
        "memoryManagerPolicy": "None",
        "cpuManagerThreadsPerCore": "1",
        "cpuManagerNUMASockets": "0=0;1=0;2=1;3=1",
        "cpuManagerOptionAlignBySocket": "true",
    }
    nrt = NodeTopology("n", zones=zones, attributes=tuple(Attribute(k, v) for k, v in attrs.items()))
    p = pod(
        container("c0", {"cpu": 2, "memory": GI}, guaranteed=True),
        container("c1", {"cpu": 5, "memory": GI, NIC: 1}, guaranteed=True),
    )
    assert filter_node(prepare_pod(p), build_view(nrt), None, fresh=True).fits
    bound = mark_lower_bound(build_view(nrt))
    assert not filter_node(prepare_pod(p), bound, None, fresh=True).fits
