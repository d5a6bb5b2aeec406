"""The agent's numaplacement and the consumer's decoding agree, over the simulator's kubelet.

The agent (rte.agent.compute.placement, over the real accounting) encodes the containers the simulated
kubelet pinned; the consumer (rte.consumer.placement) names them from the pod specs and the NRT's
manager attributes. When the fingerprint matches, they must be the same set, so the placement
decodes to the zones the kubelet really used.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from rte.consumer.placement import Outcome, decode_node_placement
from rte.model import numaplacement as npl
from rte.model.pod import PHASE_RUNNING, Container, Pod, counts_for_fingerprint
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.sim.specs import GiB
from tests.sim.test_fingerprint import NODE, Node

NIC = "example.com/nic"


def _pod(name: str, *containers: Container, init: tuple[Container, ...] = ()) -> Pod:
    return Pod(
        "sim", name, uid=name, node_name=NODE, phase="Pending", containers=containers, init_containers=init
    )


def _guaranteed(name: str, cpu: int | Fraction, **extra: int) -> Container:
    request = {"cpu": cpu, "memory": GiB, **extra}
    return Container(name, requests=request, limits=dict(request))


def _truth(node: Node) -> dict[npl.ContainerId, int]:
    """Where the simulated kubelet put each container holding exclusive CPUs or devices."""
    cpu_node = node.agent.hardware.machine.cpu_to_node()
    out = {}
    for listed in node.kubelet.listing():
        for c in listed.containers:
            zones = {cpu_node[cpu] for cpu in c.cpu_ids} | {n for d in c.devices for n in d.numa_ids}
            zones |= {n for b in c.memory for n in b.numa_ids}
            if zones:
                (zone,) = zones
                out[npl.ContainerId(listed.namespace, listed.name, c.name)] = zone
    return out


@pytest.mark.parametrize("method", list(FingerprintMethod))
@pytest.mark.parametrize("mode", list(InformerMode))
def test_a_matching_fingerprint_decodes_to_the_zones_the_kubelet_used(
    method: FingerprintMethod, mode: InformerMode
) -> None:
    node = Node(method, mode)
    pods = [
        _pod("big", _guaranteed("c", 6)),
        _pod("two", _guaranteed("a", 2), _guaranteed("b", 3)),
        _pod("half", _guaranteed("c", Fraction(1, 2))),  # pinned only if memory is
        _pod("nic", _guaranteed("c", 1, **{NIC: 1})),
        _pod("burstable", Container("c", requests={"cpu": 1})),
        _pod("side", _guaranteed("c", 2), init=(replace(_guaranteed("proxy", 1), restart_policy="Always"),)),
    ]
    for p in pods:
        node.pods[p.key] = p
        assert node.kubelet.admit(p) is not None
        node.pods[p.key] = replace(p, phase=PHASE_RUNNING)
    published = node.publish()
    assert published.attribute(npl.METADATA_ATTRIBUTE) is not None
    counted = [p for p in node.pods.values() if counts_for_fingerprint(p, mode)]
    decoded = decode_node_placement(published, counted)
    assert decoded.outcome is Outcome.DECODED, decoded.detail
    assert dict(decoded.containers) == _truth(node)
    assert npl.ContainerId("sim", "side", "proxy") in decoded.containers  # sidecars are listed too
    # A pod the consumer counts that the NRT does not (started after the publish): the count
    # differs and nothing is decoded.
    late = _pod("late", _guaranteed("c", 1))
    after = decode_node_placement(published, [*counted, replace(late, phase=PHASE_RUNNING)])
    assert after.outcome is Outcome.MISMATCH
