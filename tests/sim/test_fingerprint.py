"""The simulated agent's published fingerprint and the consumer's resync check agree.

The agent side is the real accounting, pod-set and builder code over the simulated kubelet; the
consumer side is the real :func:`rte.consumer.cache.resync.compare`. Equal pod sets must match,
different ones must not, in every informer mode and fingerprint method.
"""

from dataclasses import replace

import pytest

from rte.consumer.cache.resync import CompareResult, compare
from rte.consumer.config import ResyncMethod
from rte.consumer.store import resource_names_of
from rte.model import fingerprint as fp
from rte.model.pod import PHASE_RUNNING, QOS_GUARANTEED, Container, Pod
from rte.model.topology import NodeTopology
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.sim.agent import SimAgent
from rte.sim.hardware import build_hardware
from rte.sim.kubelet import SimKubelet
from rte.sim.specs import GiB, parse_node_shapes

NODE = "node-0000"


class Node:
    """A kubelet, its agent and the pods the API holds for the node."""

    def __init__(self, method: FingerprintMethod, mode: InformerMode) -> None:
        ((_, shape),) = parse_node_shapes("2x8c-32Gi+nic2")
        hw = build_hardware(
            shape, policy="single-numa-node", scope="container", reserved_cpus=1, reserved_memory=GiB
        )
        self.kubelet = SimKubelet(hw)
        self.agent = SimAgent(NODE, hw, self.kubelet, method=method, informer_mode=mode)
        self.pods: dict[tuple[str, str], Pod] = {}

    def bind(self, name: str, cpu: int = 2) -> Pod:
        request = {"cpu": cpu, "memory": GiB}
        pod = Pod(
            "sim",
            name,
            uid=name,
            node_name=NODE,
            phase="Pending",
            containers=(Container("c", requests=request, limits=request),),
            status_qos_class=QOS_GUARANTEED,
        )
        self.pods[pod.key] = pod
        return pod

    def start(self, name: str) -> None:
        pod = self.pods[("sim", name)]
        assert self.kubelet.admit(pod) is not None
        self.pods[pod.key] = replace(pod, phase=PHASE_RUNNING)

    def fail(self, name: str) -> None:
        self.pods[("sim", name)] = replace(self.pods[("sim", name)], phase="Failed")

    def publish(self) -> NodeTopology:
        topology, _ = self.agent.snapshot(self.pods)
        return topology

    def check(self, topology: NodeTopology, mode: InformerMode) -> CompareResult:
        names = resource_names_of(topology)
        return compare(topology, self.pods.values(), ResyncMethod.AUTODETECT, mode, names, 0.0).result


@pytest.mark.parametrize("method", list(FingerprintMethod))
@pytest.mark.parametrize("mode", list(InformerMode))
def test_the_same_pods_match_and_a_pod_started_after_the_publish_does_not(
    method: FingerprintMethod, mode: InformerMode
) -> None:
    node = Node(method, mode)
    assert node.check(node.publish(), mode) is CompareResult.MATCH  # the empty set too
    for name in ("a", "b"):
        node.bind(name)
        node.start(name)
    node.bind("in-flight")  # bound, not admitted yet: neither side counts it
    published = node.publish()
    assert published.attribute(fp.ATTRIBUTE_METHOD) == method
    assert published.attribute(fp.ATTRIBUTE) == fp.compute([("sim", "a"), ("sim", "b")])
    assert node.check(published, mode) is CompareResult.MATCH
    node.start("in-flight")
    assert node.check(published, mode) is CompareResult.MISMATCH
    assert node.check(node.publish(), mode) is CompareResult.MATCH


@pytest.mark.parametrize("mode", list(InformerMode))
def test_a_failed_pod_counts_on_both_sides_exactly_when_the_informer_mode_says_so(mode: InformerMode) -> None:
    node = Node(FingerprintMethod.WITH_EXCLUSIVE_RESOURCES, mode)
    node.bind("a")
    node.start("a")
    before = node.publish()
    node.bind("rejected")
    node.fail("rejected")  # a TopologyAffinityError: never listed by the kubelet
    expected = CompareResult.MATCH if mode is InformerMode.SHARED else CompareResult.MISMATCH
    assert node.check(before, mode) is expected
    assert node.check(node.publish(), mode) is CompareResult.MATCH
