"""Builders and a tiny HTTP client for the extender tests: NRTs, Pods and Nodes as wire JSON."""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from rte.model import fingerprint as fp
from rte.model.vocabulary import FingerprintMethod

GI = 2**30
PROFILE = "topo-aware-scheduler"


def nrt(
    name: str,
    zones: Sequence[Mapping[str, int | str]],
    *,
    pods: Sequence[tuple[str, str]] | None = None,
    policy: str = "single-numa-node",
) -> dict[str, Any]:
    """A v1alpha2 NRT; zone ``i`` is ``node-i`` with ``available`` (= allocatable = capacity).

    ``pods`` sets the fingerprint (method ``all``) over those ``(namespace, name)`` pairs.
    """
    attributes = [
        {"name": "topologyManagerPolicy", "value": policy},
        {"name": "topologyManagerScope", "value": "container"},
    ]
    if pods is not None:
        attributes += [
            {"name": fp.ATTRIBUTE, "value": fp.compute(pods)},
            {"name": fp.ATTRIBUTE_METHOD, "value": FingerprintMethod.ALL.value},
        ]
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "topologyPolicies": ["SingleNUMANodeContainerLevel"],
        "attributes": attributes,
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "costs": [{"name": f"node-{j}", "value": 10 if i == j else 21} for j in range(len(zones))],
                "resources": [
                    {"name": r, "capacity": str(q), "allocatable": str(q), "available": str(q)}
                    for r, q in sorted(zone.items())
                ],
            }
            for i, zone in enumerate(zones)
        ],
    }


def pod(
    name: str,
    requests: Mapping[str, int | str] | None = None,
    *,
    namespace: str = "default",
    node: str | None = None,
    phase: str | None = None,
    scheduler: str = PROFILE,
) -> dict[str, Any]:
    """A one-container pod; ``requests`` are also its limits (Guaranteed when cpu and memory)."""
    resources = {k: str(v) for k, v in (requests or {}).items()}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": resources, "limits": resources} if resources else {},
            }
        ],
    }
    if node is not None:
        spec["nodeName"] = node
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": spec,
    }
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def node(
    name: str, allocatable: Mapping[str, str], labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {"allocatable": dict(allocatable)},
    }


class Client:
    """One kept-alive HTTP/1.1 connection to the extender (as kube-scheduler keeps one)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        assert response.getheader("Content-Type") == "application/json"
        return response.status, json.loads(data)

    def post(self, verb: str, args: Any) -> tuple[int, Any]:
        return self.request("POST", f"/{verb}", json.dumps(args).encode())

    def get(self, path: str) -> tuple[int, Any]:
        return self.request("GET", path)

    def close(self) -> None:
        self.conn.close()
