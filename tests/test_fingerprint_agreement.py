"""The agent and the consumer compute the same fingerprint for the same node state.

Both sides are computed here from one scenario: the pods the API holds for the node (what the
scheduler sees, and what the agent's node-scoped pod watch sees), and the kubelet's List. The
reference agent classifies "exclusive" from the kubelet's assignments, which never matches the
scheduler's spec-based rule for a Guaranteed pod with fractional CPU on a node without a static
memory manager; rte classifies from the spec on both sides and matches.
"""

from __future__ import annotations

from typing import Any

import pytest

from rte.agent.compute.accounting import Accounting
from rte.agent.compute.builder import build_topology
from rte.agent.compute.podset import PodGlob, fingerprint_pods
from rte.consumer.cache.resync import CompareResult, compare
from rte.consumer.config import ResyncMethod
from rte.model import fingerprint as fp
from rte.model.pod import Pod, pod_from_manifest
from rte.model.topology import ResourceInfo, Zone
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.podres.types import ContainerResources, Device, PodResources

NODE = "worker-1"
NIC = "example.com/nic"


def _pod(
    name: str, phase: str, limits: dict[str, str] | None = None, requests: dict[str, str] | None = None
) -> Pod:
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    return pod_from_manifest(
        {
            "metadata": {"namespace": "apps", "name": name},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "resources": resources}]},
            "status": {"phase": phase},
        }
    )


# The API's view of the node (identical for the scheduler and for the agent's pod watch).
API_PODS = [
    _pod("pinned", "Running", limits={"cpu": "2", "memory": "1Gi"}),
    _pod("fractional", "Running", limits={"cpu": "1500m", "memory": "1Gi"}),  # the trap
    _pod("burstable-nic", "Running", requests={"cpu": "100m", NIC: "1"}, limits={NIC: "1"}),
    _pod("besteffort", "Running"),
    _pod("finished", "Succeeded", limits={"cpu": "1", "memory": "1Gi"}),  # gone from List (kubelet >= 1.34)
    _pod("admitted-but-pending", "Pending", limits={"cpu": "1", "memory": "1Gi"}),
]

# The kubelet's List: CPU manager static, memory manager None (no memory blocks anywhere).
LISTED = (
    PodResources("apps", "pinned", (ContainerResources("c", cpu_ids=frozenset({2, 3})),)),
    PodResources("apps", "fractional", (ContainerResources("c"),)),  # shared pool: nothing pinned
    PodResources("apps", "burstable-nic", (ContainerResources("c", devices=(Device(NIC, ("n0",), (0,)),)),)),
    PodResources("apps", "besteffort", (ContainerResources("c"),)),
    PodResources("apps", "admitted-but-pending", (ContainerResources("c", cpu_ids=frozenset({4})),)),
)

ZONES = (
    Zone(
        "node-0",
        resources=(
            ResourceInfo("cpu", 8, 8, 5),
            ResourceInfo("memory", 2**34, 2**34, 2**34),
            ResourceInfo(NIC, 4, 4, 3),
        ),
    ),
)
PUBLISHED = {"cpu", "memory", NIC}


def _publish(
    method: FingerprintMethod,
    mode: InformerMode = InformerMode.DEDICATED,
    *,
    specs: bool = True,
    exclude: tuple[PodGlob, ...] = (),
):  # type: ignore[no-untyped-def]
    pods = fingerprint_pods(
        LISTED,
        method,
        specs={p.key: p for p in API_PODS} if specs else None,
        published_resources=PUBLISHED,
        informer_mode=mode,
        exclude=exclude,
    )
    return build_topology(
        NODE, Accounting(ZONES), config=None, fingerprint_pods=pods, fingerprint_method=method
    )


@pytest.mark.parametrize("method", list(FingerprintMethod))
@pytest.mark.parametrize("mode", list(InformerMode))
def test_agent_and_consumer_agree_in_every_method_and_informer_mode(
    method: FingerprintMethod, mode: InformerMode
) -> None:
    topology = _publish(method, mode)
    result = compare(topology, API_PODS, ResyncMethod.AUTODETECT, mode, PUBLISHED, now=0.0)
    assert result.result is CompareResult.MATCH, result


def test_the_exclusive_set_holds_the_fractional_pod_and_the_device_pod() -> None:
    pods = fingerprint_pods(
        LISTED,
        FingerprintMethod.WITH_EXCLUSIVE_RESOURCES,
        specs={p.key: p for p in API_PODS},
        published_resources=PUBLISHED,
    )
    assert pods == [
        ("apps", "burstable-nic"),
        ("apps", "finished"),
        ("apps", "fractional"),
        ("apps", "pinned"),
    ]


def test_the_reference_agents_assignment_rule_would_never_match() -> None:
    """Without specs we fall back to what the kubelet pinned: the fractional-CPU pod is missed."""
    topology = _publish(FingerprintMethod.WITH_EXCLUSIVE_RESOURCES, specs=False)
    result = compare(topology, API_PODS, ResyncMethod.AUTODETECT, InformerMode.DEDICATED, PUBLISHED, now=0.0)
    assert result.result is CompareResult.MISMATCH


def test_a_running_pod_the_kubelet_has_not_listed_yet_is_not_claimed() -> None:
    late = _pod("late", "Running", limits={"cpu": "1", "memory": "1Gi"})
    pods = fingerprint_pods(
        LISTED,
        FingerprintMethod.ALL,
        specs={p.key: p for p in [*API_PODS, late]},
        published_resources=PUBLISHED,
    )
    assert ("apps", "late") not in pods  # the NRT does not account for it yet: stay dirty, safely


def test_excluded_pods_leave_the_set() -> None:
    pods = fingerprint_pods(
        LISTED,
        FingerprintMethod.ALL,
        specs={p.key: p for p in API_PODS},
        published_resources=PUBLISHED,
        exclude=(PodGlob.parse("apps/best*"), PodGlob.parse("finished")),
    )
    assert ("apps", "besteffort") not in pods and ("apps", "finished") not in pods
    assert ("apps", "pinned") in pods


def test_an_empty_node_publishes_the_empty_set_fingerprint_and_the_consumer_matches_it() -> None:
    topology = build_topology(
        NODE, Accounting(ZONES), config=None, fingerprint_pods=[], fingerprint_method=FingerprintMethod.ALL
    )
    assert topology.attribute(fp.ATTRIBUTE) == "pfp0v001ef46db3751d8e999"
    assert topology.attribute(fp.ATTRIBUTE_METHOD) == "all"
    assert topology.annotations[fp.ANNOTATION] == "pfp0v001ef46db3751d8e999"
    result = compare(topology, [], ResyncMethod.AUTODETECT, InformerMode.DEDICATED, PUBLISHED, now=0.0)
    assert result.result is CompareResult.MATCH
