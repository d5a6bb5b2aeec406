"""``FakeApiServer``: the test-facing object tying storage, REST, faults and the HTTP wire together."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from . import status
from .faults import Fault, Faults, RequestRecord
from .http import ApiHTTPServer
from .request import Request, fmt_time, now_time
from .requestlog import RequestLog
from .resources import BUILTIN, CRDS, NODES, PODS, ResourceDef, custom_resource
from .rest import Rest
from .schema import load_crd
from .status import ApiError
from .storage import Obj, Storage, Watcher

DEFAULT_TOKEN = "rte-fake-apiserver-token"
# The repository's copy of the NRT CRD (deploy/ of the source checkout rte/testing lives in); the
# schema is never read from anywhere else. An installed rte has no deploy/: pass crd_path (--crd).
DEFAULT_CRD = Path(__file__).resolve().parents[3] / "deploy" / "crd-noderesourcetopologies.yaml"
_HELPER_AGENT = "fake-apiserver-test/0"


class FakeApiServer(RequestLog):
    """An in-memory kube-apiserver on 127.0.0.1 for tests and laptops.

    Use as a context manager (``with FakeApiServer() as api: ...``) or call :meth:`start` and
    :meth:`stop`. Every public method is thread-safe.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = DEFAULT_TOKEN,
        crd_path: Path | None = None,
        crd_installed: bool = True,
        history_limit: int = 1000,
        bookmark_interval: float | None = None,
        node_impersonation: bool = False,
    ) -> None:
        self.host = host
        # Whether a client may act as its own node (impersonation.py); off, as on a cluster
        # without constrained impersonation.
        self.node_impersonation = node_impersonation
        self._port = port
        # Requests must carry ``Authorization: Bearer <token>``; None accepts anonymous requests.
        self.token = token
        # Seconds between BOOKMARK events on watches that allow them; None sends them only on demand.
        self.bookmark_interval = bookmark_interval
        self.crd = load_crd(crd_path or DEFAULT_CRD)
        self.nrt_resource = custom_resource(self.crd)
        self.storage = Storage(history_limit=history_limit)
        self.rest = Rest(self.storage, after_delete=self._after_delete)
        self.faults = Faults()
        self._by_path: dict[tuple[str, str, str], ResourceDef] = {}
        for res in (*BUILTIN, self.nrt_resource):
            for version in res.versions:
                self._by_path[(res.group, version, res.plural)] = res
        self._lock = threading.Lock()
        self._httpd: ApiHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._watches: set[Watcher] = set()
        RequestLog.__init__(self)
        if crd_installed:
            self.install_crd()

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        self._listen()
        return self

    def stop(self) -> None:
        self.refuse_connections()

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._port}"

    @property
    def listening(self) -> bool:
        return self._httpd is not None

    def _listen(self) -> None:
        with self._lock:
            if self._httpd is not None:
                return
            httpd = ApiHTTPServer((self.host, self._port), self)
            self._port = httpd.server_address[1]
            self._httpd = httpd
            self._thread = threading.Thread(
                target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-apiserver", daemon=True
            )
            self._thread.start()

    def refuse_connections(self) -> None:
        """Stop listening and cut every open connection (watches included): clients get ECONNREFUSED.

        The port stays reserved for :meth:`accept_connections`, which listens on it again.
        """
        with self._lock:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self.drop_watches(abrupt=True)
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def accept_connections(self) -> None:
        """Listen again, on the same port."""
        self._listen()

    @contextlib.contextmanager
    def offline(self) -> Iterator[None]:
        """``with api.offline(): ...``: connections are refused inside the block."""
        self.refuse_connections()
        try:
            yield
        finally:
            self.accept_connections()

    # -- watches -------------------------------------------------------------------------------

    @property
    def open_watches(self) -> int:
        with self._lock:
            return len(self._watches)

    def drop_watches(self, abrupt: bool = False) -> int:
        """End every open watch; how many were open.

        ``abrupt=False`` ends the chunked stream cleanly, like the apiserver's watch timeout (the
        client sees the stream end); ``abrupt=True`` cuts the connection mid-stream, like a
        network failure (the client sees a protocol error).
        """
        with self._lock:
            watches = list(self._watches)
        for watcher in watches:
            watcher.abrupt = abrupt
            watcher.dropped.set()
        return len(watches)

    def wait_for_watches(self, count: int, timeout: float = 5.0) -> bool:
        """Wait until at least ``count`` watches are open (a client's watch is async to the test)."""
        deadline = time.monotonic() + timeout
        while self.open_watches < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.open_watches >= count

    def send_bookmarks(self) -> int:
        """Send a BOOKMARK now on every open watch that allows bookmarks."""
        with self._lock:
            watches = list(self._watches)
        for watcher in watches:
            watcher.events.put(("BOOKMARK", {}))
        return len(watches)

    def expire_watches(self) -> int:
        """Send an ERROR 410 Expired event on every open watch and end it, and forget the history.

        That is what a client sees when etcd compacted past its position: it must list again.
        """
        with self._lock:
            watches = list(self._watches)
        self.storage.compact()
        error = status.expired(self.storage.rv - 1, self.storage.rv).status()
        for watcher in watches:
            watcher.events.put(("ERROR", error))
        return len(watches)

    def compact(self) -> None:
        """Forget the change history: resuming a watch from any older resourceVersion gets 410."""
        self.storage.compact()

    def _watch_opened(self, watcher: Watcher) -> None:
        with self._lock:
            self._watches.add(watcher)

    def _watch_closed(self, watcher: Watcher) -> None:
        self.storage.unsubscribe(watcher)
        with self._lock:
            self._watches.discard(watcher)

    # -- objects -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The global resourceVersion: it moves on every stored change, and only then."""
        return self.storage.rv

    def resource(self, plural: str) -> ResourceDef:
        for res in (*BUILTIN, self.nrt_resource):
            if res.plural == plural:
                return res
        raise KeyError(plural)

    def create_object(self, plural: str, obj: Obj) -> Obj:
        """Create an object as a client would (validated; emits ADDED); not in the request log."""
        res = self.resource(plural)
        meta = obj.get("metadata", {})
        req = Request(
            "POST",
            res,
            res.storage_version,
            meta.get("namespace") or ("default" if res.namespaced else None),
            None,
            content_type="application/json",
            body=json.dumps({"apiVersion": res.storage_api_version, "kind": res.kind, **obj}).encode(),
            user_agent=_HELPER_AGENT,
        )
        created = self.rest.create(req).body
        assert isinstance(created, dict)  # only lists answer pre-encoded bytes
        return created

    def get_object(self, plural: str, name: str, namespace: str | None = None) -> Obj | None:
        return self.storage.get(plural, (namespace or "", name))

    def list_objects(self, plural: str, namespace: str | None = None) -> list[Obj]:
        return self.storage.items(plural, namespace)

    def delete_object(self, plural: str, name: str, namespace: str | None = None) -> bool:
        res = self.resource(plural)
        req = Request("DELETE", res, res.storage_version, namespace, name, user_agent=_HELPER_AGENT)
        try:
            self.rest.delete(req)
        except ApiError as e:
            if e.code == 404:
                return False
            raise
        return True

    def nrt(self, name: str) -> Obj | None:
        """The stored NodeResourceTopology ``name`` (storage version), or None."""
        return self.get_object(self.nrt_resource.plural, name)

    # -- the CRD -------------------------------------------------------------------------------

    @property
    def crd_installed(self) -> bool:
        return self.storage.get(CRDS.plural, ("", self.crd.name)) is not None

    def install_crd(self) -> None:
        """Install the NRT CRD: its endpoints and discovery appear, and GET on the CRD answers."""
        if self.crd_installed:
            return
        manifest = json.loads(json.dumps(self.crd.manifest))
        manifest["metadata"].pop("creationTimestamp", None)
        names = manifest["spec"]["names"]
        now = fmt_time(now_time())
        approval = manifest["metadata"].get("annotations", {}).get("api-approved.kubernetes.io", "")
        conditions = [
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ("KubernetesAPIApprovalPolicyConformant", "ApprovedAnnotation", f"approved in {approval}"),
        ]
        manifest["status"] = {
            "acceptedNames": names,
            "storedVersions": [self.crd.storage_version],
            "conditions": [
                {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now}
                for t, r, m in conditions
            ],
        }
        self.create_object(CRDS.plural, manifest)

    def uninstall_crd(self) -> None:
        """Remove the CRD; like the real apiserver, that deletes every NRT and ends their watches."""
        if not self.crd_installed:
            return
        for obj in self.storage.items(self.nrt_resource.plural):
            self.storage.delete(self.nrt_resource.plural, ("", obj["metadata"]["name"]))
        with self._lock:
            watches = [w for w in self._watches if w.resource == self.nrt_resource.plural]
        for watcher in watches:
            watcher.dropped.set()
        self.storage.delete(CRDS.plural, ("", self.crd.name))

    # -- nodes and pods ------------------------------------------------------------------------

    def register_node(self, name: str, labels: dict[str, str] | None = None) -> str:
        """Create Node ``name`` and return its uid; registering it again replaces it (new uid).

        Replacing a node deletes the objects owned by the old one (ownerReferences), as the
        garbage collector would.
        """
        if self.get_object(NODES.plural, name) is not None:
            self.remove_node(name)
        node = {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
        return str(self.create_object(NODES.plural, node)["metadata"]["uid"])

    def remove_node(self, name: str) -> bool:
        return self.delete_object(NODES.plural, name)

    def node_uid(self, name: str) -> str | None:
        node = self.get_object(NODES.plural, name)
        return None if node is None else str(node["metadata"]["uid"])

    def add_pod(
        self,
        name: str,
        *,
        namespace: str = "default",
        node_name: str | None = None,
        phase: str = "Running",
        labels: dict[str, str] | None = None,
        containers: list[dict[str, Any]] | None = None,
    ) -> Obj:
        """Create a pod (emits ADDED to pod watches); ``containers`` defaults to one without resources."""
        spec: dict[str, Any] = {
            "containers": containers or [{"name": "main", "image": "registry.k8s.io/pause"}]
        }
        if node_name is not None:
            spec["nodeName"] = node_name
        pod = {
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": spec,
            "status": {"phase": phase},
        }
        return self.create_object(PODS.plural, pod)

    def delete_pod(self, name: str, namespace: str = "default") -> bool:
        """Delete a pod at once (no graceful termination); emits DELETED."""
        return self.delete_object(PODS.plural, name, namespace)

    def _after_delete(self, res: ResourceDef, obj: Obj) -> None:
        if res is NODES:
            self.collect_garbage()

    def collect_garbage(self) -> list[str]:
        """Delete objects all of whose owners (ownerReferences) are gone; their ``plural/name``."""
        collected = []
        with self.storage.lock:
            for res in (*BUILTIN, self.nrt_resource):
                for obj in self.storage.items(res.plural):
                    refs = obj["metadata"].get("ownerReferences") or []
                    if refs and not any(self._owner_exists(obj, ref) for ref in refs):
                        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
                        self.storage.delete(res.plural, key)
                        collected.append(f"{res.plural}/{obj['metadata']['name']}")
        return collected

    def _owner_exists(self, obj: Obj, ref: dict[str, Any]) -> bool:
        group = ref.get("apiVersion", "").rpartition("/")[0]
        for res in (*BUILTIN, self.nrt_resource):
            if res.kind == ref.get("kind") and res.group == group:
                ns = obj["metadata"].get("namespace", "") if res.namespaced else ""
                owner = self.storage.get(res.plural, (ns, ref.get("name", "")))
                return owner is not None and owner["metadata"]["uid"] == ref.get("uid")
        return True  # a kind this server does not know: cannot tell, so keep the dependent

    # -- routing, for the HTTP layer -----------------------------------------------------------

    def resource_for(self, group: str, version: str, plural: str) -> ResourceDef | None:
        res = self._by_path.get((group, version, plural))
        if res is not None and res.needs_crd and not self.crd_installed:
            return None
        return res

    def served_resources(self) -> list[ResourceDef]:
        return [r for r in (*BUILTIN, self.nrt_resource) if not (r.needs_crd and not self.crd_installed)]

    def fault_error(self, fault: Fault, rec: RequestRecord) -> ApiError:
        if fault.action == "conflict":
            res = self.resource(rec.resource) if rec.resource else None
            return status.conflict(rec.resource, res.group if res else "", rec.name or "")
        error = status.generic(fault.code, fault.message, fault.retry_after)
        if fault.reason:
            error.reason = fault.reason
        return error

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    # -- client configuration ------------------------------------------------------------------

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        user: dict[str, Any] = {"token": self.token} if self.token else {}
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "rte-fake", "cluster": {"server": self.url}}],
            "users": [{"name": "rte-fake", "user": user}],
            "contexts": [
                {
                    "name": "rte-fake",
                    "context": {"cluster": "rte-fake", "user": "rte-fake", "namespace": namespace},
                }
            ],
            "current-context": "rte-fake",
        }

    def write_kubeconfig(self, path: Path | str) -> Path:
        """Write a kubeconfig for this server (plain http, bearer token) to ``path``."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
        return out

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this server, leaving the global default alone."""
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config_from_dict(self.kubeconfig(), client_configuration=cfg)  # type: ignore[no-untyped-call]
        return client.ApiClient(cfg)
