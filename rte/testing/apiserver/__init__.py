"""A kube-apiserver test double: real Kubernetes REST semantics over HTTP, in memory.

Tests use it as ``with FakeApiServer() as api: ...`` (or through the fixtures of
:mod:`rte.testing.apiserver.pytest_plugin`); people run it::

    python -m rte.testing.apiserver --port 6443 --kubeconfig-out /tmp/fake.kubeconfig [--node worker-1]

and point the agent or ``kubectl --kubeconfig`` at the kubeconfig (plain http, a bearer token).
It needs ``jsonschema`` (the ``test`` extra) to validate custom resources against the CRD.

Served (what the node agent and the scheduler-side consumer touch):

- ``/apis/topology.node.k8s.io/{v1alpha1,v1alpha2}/noderesourcetopologies[/{name}]``: get, list,
  watch, create, update, patch (merge, JSON patch, apply; strategic merge is 415 as for any custom
  resource), delete. Bodies are pruned and validated against the CRD schema of the addressed
  version from ``deploy/crd-noderesourcetopologies.yaml`` (422 Invalid, one cause per field).
  Objects are stored once at v1alpha2; reading through v1alpha1 only rewrites ``apiVersion``.
  While the CRD is not installed (:meth:`FakeApiServer.uninstall_crd`) these paths are 404.
- ``/apis/apiextensions.k8s.io/v1/customresourcedefinitions[/{name}]``: read-only.
- ``/api/v1/nodes[/{name}]``, ``/api/v1/pods`` and ``/api/v1/namespaces/{ns}/pods[/{name}]``
  (fieldSelector ``spec.nodeName=...``), ``/apis/coordination.k8s.io/v1/namespaces/{ns}/leases``,
  ``/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices`` (the extender leader's endpoint).
- ``/apis/policy/v1/poddisruptionbudgets`` and
  ``/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets[/{name}]``.
- ``/version``, ``/healthz``, ``/readyz``, ``/livez`` and the discovery documents.

Semantics kept from the real apiserver: one global resourceVersion bumped by every stored change
and by nothing else (an update to identical content is not a change: same resourceVersion, no
watch event); 409 on a stale ``metadata.resourceVersion``; uid, creationTimestamp, generation
and managedFields set by the server; watch resumption from a resourceVersion, with 410 Expired
(as an ERROR event) once it is older than the kept history; selectors that turn MODIFIED into
ADDED/DELETED for objects entering/leaving the selection; BOOKMARK events; Status bodies.

Simplified, on purpose:

- Server-side apply: ownership is tracked per top-level field path with every list atomic (exact
  for the NRT schema); apply sets the configured fields, removes fields the same manager applied
  before and dropped, and conflicts (409) with another manager's different value unless
  ``force=true``. No structured merge of keyed lists.
- Strategic merge patch on built-in kinds is applied as a JSON merge patch.
- Lists ignore ``resourceVersionMatch`` and serve the latest state; ``continue`` tokens resume by
  key from the latest state, not from a snapshot.
- Deletion is immediate (no finalizers, no grace period); deleting or re-registering a Node
  deletes the objects it owns, standing in for the garbage collector.
- A watch from a resourceVersion newer than the current one starts from now instead of waiting.
"""

from .faults import Faults, RequestRecord
from .server import DEFAULT_CRD, DEFAULT_TOKEN, FakeApiServer
from .status import ApiError

__all__ = ["DEFAULT_CRD", "DEFAULT_TOKEN", "ApiError", "FakeApiServer", "Faults", "RequestRecord"]
