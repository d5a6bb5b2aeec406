"""Which pods hold exclusive resources: the one rule shared by the agent and the consumer.

The ``with-exclusive-resources`` fingerprint only matches when the node agent and the scheduler
count the same pods. The reference agent classifies pods by what the kubelet *assigned* and the
reference scheduler by what the pod *spec* asks for; the two disagree for, e.g., a Guaranteed pod
with fractional CPU on a node without a static Memory Manager, and that node then never resyncs.
rte classifies on both sides from the spec, with exactly the scheduler's rules, so agent and
consumer agree by construction.

A pod is exclusive iff one of its sidecars or app containers (regular init containers finish
before steady state and are skipped) has a request ``(r, q)`` such that, in this order:

1. ``r`` is non-native (has a ``/`` and no ``kubernetes.io/``): exclusive iff ``r`` is listed in
   some zone of the node's NRT, whatever the QoS;
2. the pod is not Guaranteed: not exclusive (for this request);
3. ``r`` is ``cpu``: exclusive iff ``q`` is a positive integer;
4. ``r`` is ``memory`` or ``hugepages-*``: exclusive iff ``q`` rounds up to a positive integer.
"""

from __future__ import annotations

from collections.abc import Collection

from rte.model.pod import QOS_GUARANTEED, Pod
from rte.model.quantity import ceil_value, milli_value


def is_native_resource(name: str) -> bool:
    """Kubernetes' rule: unqualified names and ``*kubernetes.io/*`` names are native."""
    return "/" not in name or "kubernetes.io/" in name


def is_numa_affine(name: str) -> bool:
    """Resources the Topology Manager aligns through the CPU and Memory managers."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def is_exclusive(pod: Pod, nrt_resource_names: Collection[str]) -> bool:
    """True when ``pod`` holds exclusive resources on a node publishing ``nrt_resource_names``."""
    guaranteed = pod.qos_class == QOS_GUARANTEED
    for container in pod.sidecars + pod.containers:
        for res, qty in container.requests.items():
            if not is_native_resource(res):
                if res in nrt_resource_names:
                    return True
                continue
            if not guaranteed:
                continue
            value = ceil_value(qty)
            if res == "cpu":
                if value > 0 and value * 1000 == milli_value(qty):
                    return True
            elif (res == "memory" or res.startswith("hugepages-")) and value > 0:
                return True
    return False
