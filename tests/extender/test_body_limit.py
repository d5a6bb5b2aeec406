"""The request body limit's default fits whole-Node mode at 5000 real Nodes; more is a 413."""

from __future__ import annotations

import json
from typing import Any

from rte.extender.server import DEFAULT_MAX_BODY
from rte.extender.settings import extender_settings

MAX_IMAGES = 50
"""The kubelet's nodeStatusMaxImages default: a Node's status lists at most this many images."""


def real_node(name: str) -> dict[str, Any]:
    """A Node as the apiserver serves it, with its 50 largest images (the bulk of its size)."""
    digest = "sha256:" + "0123456789abcdef" * 4
    conditions = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready", "NetworkUnavailable"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": "6f1c9a0e-8a8b-4b7e-9c44-1f0d2c9e7a51",
            "resourceVersion": "123456789",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "bare-metal-2s-64c",
                "topology.kubernetes.io/zone": "zone-a",
                "topology.kubernetes.io/region": "region-1",
                "node-role.kubernetes.io/worker": "",
                "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": json.dumps({"csi.example.com": name}),
            },
        },
        "spec": {
            "podCIDR": "10.244.12.0/24",
            "podCIDRs": ["10.244.12.0/24"],
            "providerID": f"metal://{name}",
        },
        "status": {
            "capacity": {"cpu": "128", "memory": "790Gi", "hugepages-1Gi": "64Gi", "pods": "110"},
            "allocatable": {"cpu": "124", "memory": "780Gi", "hugepages-1Gi": "64Gi", "pods": "110"},
            "conditions": [
                {
                    "type": c,
                    "status": "False",
                    "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "reason": f"Kubelet{c}",
                    "message": f"kubelet reports {c} as it is",
                }
                for c in conditions
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.12.34"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "machineID": "0" * 32,
                "systemUUID": "4c4c4544-0000-1000-8000-000000000000",
                "bootID": "9b2e1c3d-0000-4000-8000-000000000000",
                "kernelVersion": "6.8.0-45-generic",
                "osImage": "Ubuntu 24.04.1 LTS",
                "containerRuntimeVersion": "containerd://2.0.0",
                "kubeletVersion": "v1.35.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": [
                {
                    "names": [
                        f"registry.example.com/team-{i}/service-{i}@{digest}",
                        f"registry.example.com/team-{i}/service-{i}:v1.{i}.0",
                    ],
                    "sizeBytes": 123456789 + i,
                }
                for i in range(MAX_IMAGES)
            ],
        },
    }


def test_the_default_holds_5000_real_nodes_in_whole_node_mode() -> None:
    size = len(json.dumps({"Pod": {}, "Nodes": {"items": [real_node("worker-00001")]}}).encode())
    assert size > 8 * 1024  # real: the images make most of it
    assert 5000 * size <= DEFAULT_MAX_BODY
    assert extender_settings().max_request_body == DEFAULT_MAX_BODY
