"""``distribute-cpus-across-numa``: the admission model's CPU split is the simulated kubelet's.

The simulated kubelet picks CPU ids as ``takeByTopologyNUMADistributed`` does (kubernetes/kubernetes
``pkg/kubelet/cm/cpumanager/cpu_assignment.go``, via ``policy_static.go`` ``allocateCPUs``: the
merged hint's NUMA nodes first, then the rest); the admission model, on counts only, predicts how
many CPUs each zone gives (:mod:`rte.model.admission.distribute`). Random sequences of pods whose
containers span zones are admitted and released on one node with the option on; for each admitted
pod the free CPUs per zone the model leaves must be the kubelet's where the model says its split is
exact, and never more than the kubelet's where it is not (a tie broken by the NUMA order).

The Filter's verdicts with the option are checked against the same kubelet in
``test_kubelet_agreement.py``; here the split itself is compared, because with the Static memory
manager (the simulated kubelets') a zone used by a multi-zone container cannot serve a later
single-zone one, so the split rarely changes a verdict there.
"""

import random

import pytest

from rte.model.admission.admit import admit_pod
from rte.model.admission.allocate import CountAllocator
from rte.model.admission.masks import popcount
from rte.model.admission.node import Working
from rte.model.admission.units import AdmissionUnit, pod_admission_units
from rte.model.pod import Pod
from rte.sim.hardware import build_hardware
from rte.sim.kubelet import SimKubelet
from rte.sim.specs import GiB, parse_node_shapes, parse_pod_mix
from rte.sim.workload import template_pod

# Under ``restricted`` a unit spanning zones is admitted only if its memory spans them too (the
# merged hint is preferred only when every provider prefers the same mask): the spanning shapes
# ask for more memory than a zone has.
CASES = {
    "2x16c-64Gi": "40%:20c-40Gi,20%:24c-36Gi,10%:18c-34Gi+sidecar2c-1Gi,15%:3c-1Gi,15%:2x2c-2Gi",
    "3x8c-48Gi": "30%:10c-20Gi,20%:12c-18Gi,15%:2x5c-9Gi,15%:3c-1Gi,20%:2x2c-4Gi",
    "4x6c2t-48Gi": "30%:8c-14Gi,20%:10c-20Gi,15%:16c-30Gi,20%:2c-1Gi,15%:4c-2Gi",
    # Two NUMA zones per socket (SNC2 / NPS2): the kubelet orders NUMA nodes socket by socket
    # (``socketsFirst``), which decides ties; the model reads the order from the socket map.
    "4x6c2t2s-48Gi": "30%:8c-14Gi,20%:10c-20Gi,15%:16c-30Gi,20%:2c-1Gi,15%:4c-2Gi",
    "4x8c2s-64Gi": "25%:10c-20Gi,20%:12c-24Gi,15%:2x5c-9Gi,20%:3c-1Gi,20%:2x2c-4Gi",
}


class _Capture(CountAllocator):
    """The count allocator, keeping the last state it allocated in."""

    working: Working | None = None

    def take(self, working: Working, unit: AdmissionUnit, mask: int | None, memory_mask: int | None) -> None:
        self.working = working
        self.spanned = getattr(self, "spanned", False) or (mask is not None and popcount(mask) > 1)
        super().take(working, unit, mask, memory_mask)


@pytest.mark.parametrize("shape", sorted(CASES))
@pytest.mark.parametrize("seed", range(5))
def test_the_models_split_is_the_simulated_kubelets(shape: str, seed: int) -> None:
    ((_, node_shape),) = parse_node_shapes(shape)
    mix = parse_pod_mix(CASES[shape])
    options = {"distribute-cpus-across-numa": "true"}
    hw = build_hardware(
        node_shape,
        policy="restricted",
        scope="container",
        reserved_cpus=2,
        reserved_memory=GiB,
        cpu_manager_options=options,
    )
    kubelet = SimKubelet(hw)
    rng = random.Random(seed)
    running: list[tuple[str, str]] = []
    compared = 0
    for i in range(60):
        if running and rng.random() < 0.4:
            assert kubelet.release(running.pop(rng.randrange(len(running))))
            continue
        shape_index = rng.choices(range(len(mix)), [p for p, _ in mix])[0]
        pod: Pod = template_pod(mix[shape_index][1], "default-scheduler", name=f"p{i}")
        node = kubelet.node_resources()
        assert node.facts.distribute_cpus_across_numa
        capture = _Capture()
        model = admit_pod(node, pod_admission_units(pod, node.facts), capture)
        placed = kubelet.admit(pod)
        if model.admitted:
            assert placed is not None, model.reason
        if placed is None or not model.admitted:
            continue
        running.append(pod.key)
        assert capture.working is not None
        predicted = capture.working.cpu_free
        actual = [kubelet.free(z)["cpu"] for z in range(hw.zones)]
        if capture.working.exact:
            assert predicted == actual, (pod.name, mix[shape_index][1].text)
            compared += getattr(capture, "spanned", False)
        else:
            assert all(p <= a for p, a in zip(predicted, actual, strict=True)), (predicted, actual)
    assert compared, "no exact multi-zone split was compared"
