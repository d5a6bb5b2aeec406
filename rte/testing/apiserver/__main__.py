"""A kube-apiserver test double: real Kubernetes REST semantics over HTTP, in memory.

Tests import it (``import fake_apiserver``; pytest puts ``hack/`` on the path); people run it::

    python hack/fake_apiserver.py --port 6443 --kubeconfig-out /tmp/fake.kubeconfig [--node worker-1]

and point the agent or ``kubectl --kubeconfig`` at the kubeconfig (plain http, a bearer token).

Served (what the node agent and the scheduler-side consumer touch):

- ``/apis/topology.node.k8s.io/{v1alpha1,v1alpha2}/noderesourcetopologies[/{name}]``: get, list,
  watch, create, update, patch (merge, JSON patch, apply; strategic merge is 415 as for any custom
  resource), delete. Bodies are pruned and validated against the CRD schema of the addressed
  version from ``deploy/crd-noderesourcetopologies.yaml`` (422 Invalid, one cause per field).
  Objects are stored once at v1alpha2; reading through v1alpha1 only rewrites ``apiVersion``.
  While the CRD is not installed (:meth:`FakeApiServer.uninstall_crd`) these paths are 404.
- ``/apis/apiextensions.k8s.io/v1/customresourcedefinitions[/{name}]``: read-only.
- ``/api/v1/nodes[/{name}]``, ``/api/v1/pods`` and ``/api/v1/namespaces/{ns}/pods[/{name}]``
  (fieldSelector ``spec.nodeName=...``), ``/apis/coordination.k8s.io/v1/namespaces/{ns}/leases``.
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

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from apiserver_double import DEFAULT_CRD, DEFAULT_TOKEN, ApiError, FakeApiServer, Faults, RequestRecord

__all__ = ["DEFAULT_CRD", "DEFAULT_TOKEN", "ApiError", "FakeApiServer", "Faults", "RequestRecord", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run an in-memory kube-apiserver double until interrupted.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free one")
    parser.add_argument("--kubeconfig-out", type=Path, help="write a kubeconfig for the server here")
    parser.add_argument("--token", default=DEFAULT_TOKEN, help="bearer token clients must send")
    parser.add_argument("--anonymous", action="store_true", help="accept requests without a token")
    parser.add_argument("--no-crd", action="store_true", help="start without the NRT CRD installed")
    parser.add_argument("--crd", type=Path, default=DEFAULT_CRD, help="CRD manifest (default: the repo copy)")
    parser.add_argument("--node", action="append", default=[], help="register a Node with this name")
    parser.add_argument("--bookmark-interval", type=float, help="seconds between watch BOOKMARK events")
    args = parser.parse_args(argv)

    server = FakeApiServer(
        args.host,
        args.port,
        token=None if args.anonymous else args.token,
        crd_path=args.crd,
        crd_installed=not args.no_crd,
        bookmark_interval=args.bookmark_interval,
    )
    for node in args.node:
        server.register_node(node)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with server:
        print(f"fake apiserver listening on {server.url}", flush=True)
        if args.kubeconfig_out:
            server.write_kubeconfig(args.kubeconfig_out)
            print(f"kubeconfig written to {args.kubeconfig_out}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
