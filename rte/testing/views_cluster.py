"""A small cluster in the apiserver double, for the live views (``rte top``, ``explain``, ``fit``).

Builders for Nodes, NRTs, pods and the agents' Leases as the apiserver would hold them, with
the server's clock moved back so that objects carry the ages a real cluster shows, and
:func:`demo`: four workers, one of them busy, one whose agent stopped, one with GPUs, and three
Pending pods. People run it to try the views without a cluster::

    python -m rte.testing.views_cluster --kubeconfig-out /tmp/views.kubeconfig
    rte top --kubeconfig /tmp/views.kubeconfig
    rte explain --kubeconfig /tmp/views.kubeconfig default/train-big

It needs ``jsonschema`` (the ``test`` extra), like the apiserver double.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rte.model import fingerprint as fp
from rte.model import numaplacement as npl
from rte.model.vocabulary import FingerprintMethod
from rte.testing.apiserver import FakeApiServer
from rte.testing.apiserver.request import now_time

GI = 2**30
Zone = Mapping[str, tuple[int, int]]
"""Resource name -> (allocatable, available); capacity is taken equal to allocatable."""


@contextmanager
def server_time(api: FakeApiServer, when: datetime) -> Iterator[None]:
    """Objects written inside are stamped ``when`` (creation and managedFields times)."""
    api.rest.clock = lambda: when
    try:
        yield
    finally:
        api.rest.clock = now_time


def nrt(
    name: str,
    zones: Sequence[Zone],
    *,
    pods: Sequence[tuple[str, str]] | None = (),
    method: FingerprintMethod = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES,
    policy: str | None = "single-numa-node",
    scope: str = "container",
    placed: Mapping[tuple[str, str, str], int] | None = None,
) -> dict[str, Any]:
    """A v1alpha2 NRT with zones ``node-0``, ``node-1``, ...; ``pods`` are the fingerprinted
    ``(namespace, name)`` pairs (None: no fingerprint at all); ``placed`` (namespace, pod,
    container) -> NUMA id adds the numaplacement attributes an agent publishes for them; ``policy``
    None: no Topology Manager policy stated at all (an agent without the kubelet config)."""
    attributes = []
    if policy is not None:
        attributes += [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": scope},
        ]
    annotations = {}
    if pods is not None:
        sign = fp.compute(pods)
        attributes += [
            {"name": fp.ATTRIBUTE, "value": sign},
            {"name": fp.ATTRIBUTE_METHOD, "value": method.value},
        ]
        annotations[fp.ANNOTATION] = sign
    vectors: Mapping[int, str] = {}
    if placed is not None:
        payload = npl.encode(len(zones), [(npl.ContainerId(*key), numa) for key, numa in placed.items()])
        attributes.append({"name": npl.METADATA_ATTRIBUTE, "value": payload.pack_metadata()})
        vectors = payload.vectors
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "annotations": annotations},
        "topologyPolicies": []
        if policy is None
        else ["SingleNUMANodePodLevel" if scope == "pod" else "SingleNUMANodeContainerLevel"],
        "attributes": attributes,
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "costs": [{"name": f"node-{j}", "value": 10 if i == j else 21} for j in range(len(zones))],
                "resources": [
                    {"name": r, "capacity": str(a), "allocatable": str(a), "available": str(v)}
                    for r, (a, v) in sorted(zone.items())
                ],
                **(
                    {"attributes": [{"name": npl.VECTOR_ATTRIBUTE, "value": vectors[i]}]}
                    if i in vectors
                    else {}
                ),
            }
            for i, zone in enumerate(zones)
        ],
    }


def node(
    name: str, allocatable: Mapping[str, int | str], labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "allocatable": {k: str(v) for k, v in allocatable.items()},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    requests: Mapping[str, int | str],
    *,
    namespace: str = "default",
    node_name: str | None = None,
    phase: str = "Running",
    scheduler: str = "topo-aware-scheduler",
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A one-container pod whose limits equal its requests (Guaranteed with cpu and memory)."""
    resources = {k: str(v) for k, v in requests.items()}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "app",
                "image": "registry.example/app:1",
                "resources": {"requests": resources, "limits": resources} if resources else {},
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase, **(status or {})},
    }


def lease(node_name: str, renewed: datetime, *, namespace: str = "rte", seconds: int = 40) -> dict[str, Any]:
    when = renewed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "metadata": {"name": node_name, "namespace": namespace},
        "spec": {
            "holderIdentity": f"rte-agent/{node_name}",
            "leaseDurationSeconds": seconds,
            "acquireTime": when,
            "renewTime": when,
        },
    }


def _worker(cpu: tuple[int, int], memory_used: int, hugepages_used: int, vfs: tuple[int, int]) -> Zone:
    """A zone of the workers: 90.5 GiB of memory and 8 GiB of 1 GiB hugepages allocatable."""
    memory = 90 * GI + GI // 2
    return {
        "cpu": cpu,
        "memory": (memory, memory - memory_used),
        "hugepages-1Gi": (8 * GI, 8 * GI - hugepages_used),
        "intel.com/sriov_netdevice": vfs,
    }


WORKER_ALLOCATABLE = {
    "cpu": 46,
    "memory": 181 * GI,
    "hugepages-1Gi": 16 * GI,
    "intel.com/sriov_netdevice": 16,
    "pods": 110,
}


LEASE_AGES = {"worker-1": 3, "worker-2": 6, "worker-3": 185, "gpu-1": 8}
"""How many seconds before ``now`` each agent last renewed its Lease."""
STOPPED_AGENTS = frozenset({"worker-3"})
"""The agents that renew nothing any more: their Leases only get older."""


def renew_heartbeats(api: FakeApiServer, now: datetime | None = None) -> None:
    """What the running agents do: their Leases again look renewed as long ago as in :func:`demo`.

    Without it a demo left running shows every node LeaseStale once the Leases' 40 s are over,
    and the tables in the docs stop reproducing.
    """
    now = now or datetime.now(UTC)
    for name, renewed in LEASE_AGES.items():
        current = api.get_object("leases", name, "rte")
        if name in STOPPED_AGENTS or current is None:
            continue
        when = (now - timedelta(seconds=renewed)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        current["spec"]["renewTime"] = when
        api.storage.update("leases", current)


def demo(api: FakeApiServer, now: datetime | None = None) -> None:
    """Four workers and three Pending pods; ages relative to ``now`` (default: the real time).

    * worker-1: calm, current (its NRT last changed 14 minutes ago, Lease renewed 3 s ago);
    * worker-2: busy; a pod started a moment ago that its NRT does not count yet (PodsMismatch);
    * worker-3: its agent stopped renewing its Lease 3 minutes ago (LeaseStale);
    * gpu-1: two GPUs per zone, pod scope;
    * Pending: ``default/train-big`` (24 CPUs, 2 VFs: fits nowhere), ``telco/du-2`` (fits),
      ``default/batch-1`` (the default scheduler, which reads no NRTs).
    """
    now = now or datetime.now(UTC)

    def ago(**delta: float) -> datetime:
        return now - timedelta(**delta)

    labels = {
        "node-role.kubernetes.io/worker": "",
        "feature.node.kubernetes.io/network-sriov.capable": "true",
    }
    gpu_labels = {"node-role.kubernetes.io/worker": "", "nvidia.com/gpu.present": "true"}
    with server_time(api, ago(days=12)):
        for name in ("worker-1", "worker-2", "worker-3"):
            api.create_object("nodes", node(name, WORKER_ALLOCATABLE, labels))
        api.create_object(
            "nodes",
            node("gpu-1", {"cpu": 62, "memory": 500 * GI, "nvidia.com/gpu": 4, "pods": 110}, gpu_labels),
        )

    running = [
        (
            "telco",
            "du-1",
            "worker-1",
            {"cpu": 16, "memory": 32 * GI, "hugepages-1Gi": 4 * GI, "intel.com/sriov_netdevice": 4},
        ),
        ("default", "web-7d9f", "worker-1", {}),
        (
            "telco",
            "cu-1",
            "worker-2",
            {"cpu": 20, "memory": 64 * GI, "hugepages-1Gi": 4 * GI, "intel.com/sriov_netdevice": 6},
        ),
        ("telco", "cu-2", "worker-2", {"cpu": 18, "memory": 48 * GI, "intel.com/sriov_netdevice": 4}),
        ("telco", "upf-1", "worker-3", {"cpu": 8, "memory": 16 * GI, "intel.com/sriov_netdevice": 2}),
        ("ml", "infer-1", "gpu-1", {"cpu": 8, "memory": 64 * GI, "nvidia.com/gpu": 1}),
    ]
    with server_time(api, ago(hours=3)):
        for namespace, name, where, requests in running:
            api.create_object("pods", pod(name, requests, namespace=namespace, node_name=where))
    # worker-2's newest pod: started seconds ago, the agent has not published since.
    with server_time(api, ago(seconds=2)):
        api.create_object(
            "pods", pod("cu-3", {"cpu": 4, "memory": 8 * GI}, namespace="telco", node_name="worker-2")
        )

    nrts = [
        (
            ago(minutes=14),
            nrt(
                "worker-1",
                [
                    _worker((22, 6), 32 * GI, 4 * GI, (8, 4)),
                    _worker((24, 24), 0, 0, (8, 8)),
                ],
                pods=[("telco", "du-1")],
                placed={("telco", "du-1", "app"): 0},
            ),
        ),
        (
            ago(minutes=2),
            nrt(
                "worker-2",
                [
                    _worker((22, 2), 64 * GI, 4 * GI, (8, 2)),
                    _worker((24, 6), 48 * GI, 0, (8, 4)),
                ],
                pods=[("telco", "cu-1"), ("telco", "cu-2")],
                placed={("telco", "cu-1", "app"): 0, ("telco", "cu-2", "app"): 1},
            ),
        ),
        (
            ago(minutes=41),
            nrt(
                "worker-3",
                [
                    _worker((22, 14), 16 * GI, 0, (8, 6)),
                    _worker((24, 24), 0, 0, (8, 8)),
                ],
                pods=[("telco", "upf-1")],
            ),
        ),
        (
            ago(hours=5),
            nrt(
                "gpu-1",
                [
                    {"cpu": (30, 22), "memory": (250 * GI, 186 * GI), "nvidia.com/gpu": (2, 1)},
                    {"cpu": (32, 32), "memory": (250 * GI, 250 * GI), "nvidia.com/gpu": (2, 2)},
                ],
                pods=[("ml", "infer-1")],
                scope="pod",
            ),
        ),
    ]
    for when, obj in nrts:
        with server_time(api, when):
            api.create_object(api.nrt_resource.plural, obj)
    for name, renewed in LEASE_AGES.items():
        with server_time(api, ago(days=12)):
            api.create_object("leases", lease(name, ago(seconds=renewed)))

    with server_time(api, ago(minutes=6)):
        api.create_object(
            "pods",
            pod("train-big", {"cpu": 24, "memory": 96 * GI, "intel.com/sriov_netdevice": 2}, phase="Pending"),
        )
        api.create_object(
            "pods",
            pod(
                "du-2",
                {"cpu": 12, "memory": 24 * GI, "hugepages-1Gi": 2 * GI, "intel.com/sriov_netdevice": 2},
                namespace="telco",
                phase="Pending",
            ),
        )
        api.create_object(
            "pods",
            pod("batch-1", {"cpu": 4, "memory": 8 * GI}, phase="Pending", scheduler="default-scheduler"),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rte.testing.views_cluster",
        description="Run the apiserver double holding a small demo cluster until interrupted.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free one")
    parser.add_argument("--kubeconfig-out", type=Path, required=True, help="write a kubeconfig here")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with FakeApiServer(port=args.port) as api:
        demo(api)
        api.write_kubeconfig(args.kubeconfig_out)
        print(f"demo cluster at {api.url}; kubeconfig written to {args.kubeconfig_out}", flush=True)
        while not stop.wait(1.0):
            renew_heartbeats(api)
    return 0


if __name__ == "__main__":
    sys.exit(main())
