"""The leader's address as the one endpoint of the extender's Service (a ``discovery.k8s.io/v1``
EndpointSlice), so that kube-scheduler, which calls the Service, reaches the leader.

Why not readiness: a Deployment whose standby replicas are never ready never completes a rolling
update (the new pods must become ready before the old leader goes), and a PodDisruptionBudget
counts only ready pods, so it would forbid evicting the leader and block every drain of its
node. Here every warm replica is ready, and the Service has no selector: its only EndpointSlice,
``<service>-leader``, is written by the leader when it has taken over, with its own address and
the verbs port. A new leader overwrites it. A replica that is not the leader answers the verbs
503 and closes the connection, so a client holding a connection to a former leader reconnects
and is sent to the current one.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

MANAGED_BY = "rte-extender"
"""The EndpointSlice's ``endpointslice.kubernetes.io/managed-by`` label: not the EndpointSlice
controller's value, so that controller leaves the slice alone."""

PORT_NAME = "https"
"""The name of the Service's port, which the slice's port must carry."""


def slice_name(service: str) -> str:
    return f"{service}-leader"


def desired_slice(
    namespace: str, service: str, address: str, port: int, pod_name: str = ""
) -> dict[str, Any]:
    """The EndpointSlice naming ``address:port`` as the Service's only endpoint."""
    endpoint: dict[str, Any] = {"addresses": [address], "conditions": {"ready": True}}
    if pod_name:
        endpoint["targetRef"] = {"kind": "Pod", "namespace": namespace, "name": pod_name}
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": slice_name(service),
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
            },
        },
        "addressType": "IPv6" if ":" in address else "IPv4",
        "endpoints": [endpoint],
        "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}],
    }


class LeaderEndpoint:
    """Writes :func:`desired_slice` when the stored slice differs (create, or update over a read)."""

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        service: str,
        address: str,
        port: int,
        *,
        pod_name: str = "",
        timeout: float = 10.0,
    ) -> None:
        from kubernetes import client

        self._api: Any = client.DiscoveryV1Api(api_client)  # takes the body as a plain dict too
        self._serialize = api_client.sanitize_for_serialization
        self.namespace = namespace
        self.name = slice_name(service)
        self.desired = desired_slice(namespace, service, address, port, pod_name)
        self.timeout = timeout

    def publish(self) -> bool:
        """Make the stored slice name this replica; True when it had to be written."""
        try:
            current: Any = self._api.read_namespaced_endpoint_slice(
                self.name, self.namespace, _request_timeout=self.timeout
            )
        except Exception as e:
            if getattr(e, "status", None) != 404:
                raise
            self._api.create_namespaced_endpoint_slice(
                self.namespace, self.desired, _request_timeout=self.timeout
            )
            log.info("EndpointSlice %s/%s created for the leader", self.namespace, self.name)
            return True
        stored = self._serialize(current)
        if all(stored.get(k) == self.desired[k] for k in ("addressType", "endpoints", "ports")) and (
            stored.get("metadata", {}).get("labels", {}).items() >= self.desired["metadata"]["labels"].items()
        ):
            return False
        body = {
            **self.desired,
            "metadata": {**self.desired["metadata"], "resourceVersion": current.metadata.resource_version},
        }
        self._api.replace_namespaced_endpoint_slice(
            self.name, self.namespace, body, _request_timeout=self.timeout
        )
        log.info("EndpointSlice %s/%s now points at this leader", self.namespace, self.name)
        return True
