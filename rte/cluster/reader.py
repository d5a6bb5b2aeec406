"""One reader of the cluster objects the views need, with every failure as one line.

Reads go through the generic request path of the client (:func:`rte.runtime.kubeclient.raw_get`)
and decode JSON directly: the views parse the wire format with the model's own readers, and the
generated model classes would be slower and drop fields (``managedFields`` times).

How a failure reads:

* the NRT resource is not served (404 on its collection): :class:`~rte.errors.ConfigError`,
  exit 2, naming the CRD and how to install it;
* the apiserver cannot be reached: :class:`~rte.errors.UnavailableError`, exit 1, naming it;
* 401 / 403: :class:`~rte.errors.RteError` naming the verb and the resource that were refused;
* an object that was asked for by name and does not exist, or a Node label selector the apiserver
  cannot parse (400): :class:`~rte.errors.InputError`.

Selections of a few nodes read each node's objects by name (pods by ``spec.nodeName``, which the
apiserver indexes); larger ones, and "every node", read each collection once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from typing import Any, TypeVar

from rte.errors import ConfigError, InputError, RteError, UnavailableError
from rte.model.nrt import GROUP, PLURAL, VERSION
from rte.runtime.kubeclient import raw_get
from rte.runtime.reflector import Obj

T = TypeVar("T")

NRT_CRD = f"{PLURAL}.{GROUP}"
NRT_PATH = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
CRD_HINT = "kubectl apply -f deploy/crd-noderesourcetopologies.yaml"

PER_NODE_LIMIT = 20
"""Up to this many selected nodes, their objects are read one node at a time; above it, one list
of the whole collection costs the apiserver less than that many requests."""
PAGE_SIZE = 500
CLI_QPS = 50.0
"""A person's command, not a daemon: pacing here only guards the apiserver against a bug that loops."""


class _BadRequest(UnavailableError):
    """The apiserver refused the request itself (400); where the user wrote part of the request (a
    selector), the caller turns it into an :class:`InputError`."""

    def __init__(self, refused: RteError, message: str) -> None:
        super().__init__(str(refused))
        self.message = message


class _NotFound(Exception):
    """Internal: a 404 the caller interprets (missing object or missing resource)."""


def _status_message(exc: Any) -> str:
    """The ``message`` of a Status body, or the HTTP reason."""
    body = getattr(exc, "body", None)
    if body:
        try:
            decoded = json.loads(body)
        except (TypeError, ValueError):
            decoded = None
        if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
            return str(decoded["message"])
    return str(getattr(exc, "reason", "") or "")


class ClusterReader:
    """Reads Nodes, NRTs, pods and Leases from the apiserver behind ``api_client``.

    ``list_resource_version="0"`` lets lists be served from the apiserver's watch cache (cheap,
    possibly a second behind): what a view that polls wants. One-shot views read the latest.
    """

    def __init__(self, api_client: Any, *, list_resource_version: str | None = None) -> None:
        self.api_client = api_client
        self.server = str(getattr(api_client.configuration, "host", "") or "the apiserver")
        self.list_resource_version = list_resource_version

    def close(self) -> None:
        self.api_client.close()

    # -- the requests ---------------------------------------------------------------------------

    def _get(self, path: str, query: Iterable[tuple[str, str | int]], verb: str, what: str) -> Obj:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            response = raw_get(self.api_client, path, list(query))
            decoded = json.loads(response.data)
        except ApiException as e:
            if e.status == 404:
                raise _NotFound(path) from e
            if e.status == 400:
                raise _BadRequest(self._refused(e, verb, what), _status_message(e)) from e
            raise self._refused(e, verb, what) from e
        except (HTTPError, OSError) as e:
            raise UnavailableError(f"cannot reach the apiserver at {self.server}: {self._cause(e)}") from e
        except ValueError as e:
            raise UnavailableError(f"{self.server} answered {verb} {what} with invalid JSON: {e}") from e
        if not isinstance(decoded, dict):
            raise UnavailableError(f"{self.server} answered {verb} {what} with something not an object")
        return decoded

    @staticmethod
    def _cause(exc: BaseException) -> str:
        """What went wrong, in the OS's words where there are some (``Connection refused``)."""
        from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError

        chain: list[BaseException] = []
        todo: list[object] = [exc]
        while todo:
            current = todo.pop(0)
            if isinstance(current, BaseException) and current not in chain:
                chain.append(current)
                # urllib3 keeps the socket error in ``.reason`` (MaxRetryError) or as the cause.
                todo += [getattr(current, "reason", None), current.__cause__, current.__context__]
        for e in chain:
            if isinstance(e, OSError) and e.strerror:
                return e.strerror
        # urllib3's NewConnectionError is a kind of ConnectTimeoutError: a refusal, not a timeout.
        timeouts = (ReadTimeoutError, ConnectTimeoutError, TimeoutError)
        if any(isinstance(e, timeouts) and not isinstance(e, NewConnectionError) for e in chain):
            return "no answer in time (see --request-timeout)"
        return str(exc) or type(exc).__name__

    def _refused(self, exc: Any, verb: str, what: str) -> RteError:
        status = int(getattr(exc, "status", 0) or 0)
        message = _status_message(exc)
        if status == 403:
            return RteError(f"forbidden: cannot {verb} {what} (RBAC): {message}")
        if status == 401:
            return RteError(
                f"unauthorized: {self.server} refused the credentials to {verb} {what}: {message}"
            )
        if status == 0:
            return UnavailableError(f"cannot reach the apiserver at {self.server}: {message}")
        return UnavailableError(f"{verb} {what}: the apiserver answered {status} {message}".rstrip())

    def _list(self, path: str, what: str, query: Iterable[tuple[str, str]] = ()) -> list[Obj]:
        """Every item of a collection, page by page.

        The resourceVersion goes with the first page only: the apiserver refuses one beside a
        ``continue`` token, which already pins the list to the first page's snapshot.
        """
        base: list[tuple[str, str | int]] = [*query, ("limit", PAGE_SIZE)]
        first = [("resourceVersion", self.list_resource_version)] if self.list_resource_version else []
        items: list[Obj] = []
        token = ""
        while True:
            page = [*base, ("continue", token)] if token else [*base, *first]
            body = self._get(path, page, "list", what)
            items += [i for i in body.get("items") or () if isinstance(i, dict)]
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def _one(self, path: str, what: str) -> Obj | None:
        try:
            return self._get(path, (), "get", what)
        except _NotFound:
            return None

    # -- NRTs -----------------------------------------------------------------------------------

    def _crd_missing(self, cause: BaseException) -> ConfigError:
        return ConfigError(
            NRT_CRD,
            f"the apiserver at {self.server} does not serve {GROUP}/{VERSION} {PLURAL}:"
            f" the CRD is not installed ({CRD_HINT})",
        )

    def nrts(self, names: Collection[str] | None = None) -> list[Obj]:
        """The NRTs of ``names`` (those that exist), or every NRT."""
        try:
            if names is not None and len(names) <= PER_NODE_LIMIT:
                found = [self._one(f"{NRT_PATH}/{n}", f"{PLURAL} {n}") for n in sorted(names)]
                if not any(found):
                    # A 404 on each name may also mean that the resource is not served at all.
                    self._get(NRT_PATH, [("limit", 1)], "list", PLURAL)
                return [o for o in found if o]
            every = self._list(NRT_PATH, PLURAL)
        except _NotFound as e:
            raise self._crd_missing(e) from e
        return every if names is None else [o for o in every if _name(o) in names]

    # -- Nodes ----------------------------------------------------------------------------------

    def nodes(self, names: Collection[str] | None = None, selector: str | None = None) -> list[Obj]:
        """Nodes by name (those that exist), by label selector, or all of them."""
        try:
            if names is not None and len(names) <= PER_NODE_LIMIT and not selector:
                return [
                    o for o in (self._one(f"/api/v1/nodes/{n}", f"nodes {n}") for n in sorted(names)) if o
                ]
            query = [("labelSelector", selector)] if selector else []
            every = self._list("/api/v1/nodes", "nodes", query)
        except _BadRequest as e:
            # The only part of a Node list the user writes is the selector: its syntax is bad input.
            raise InputError("--selector", f"{selector!r}: {e.message}") from e
        except _NotFound as e:
            raise UnavailableError(f"{self.server} does not serve /api/v1/nodes") from e
        return every if names is None else [o for o in every if _name(o) in names]

    # -- Leases ---------------------------------------------------------------------------------

    def leases(self, namespace: str, names: Collection[str] | None = None) -> list[Obj]:
        """The agents' Leases in ``namespace`` (a missing namespace simply holds none)."""
        path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        what = f"leases in namespace {namespace}"
        try:
            if names is not None and len(names) <= PER_NODE_LIMIT:
                return [o for o in (self._one(f"{path}/{n}", f"{what} ({n})") for n in sorted(names)) if o]
            every = self._list(path, what)
        except _NotFound:
            return []
        return every if names is None else [o for o in every if _name(o) in names]

    # -- pods -----------------------------------------------------------------------------------

    def pods_on(self, nodes: Collection[str]) -> dict[str, list[Obj]]:
        """The pods bound to each of ``nodes`` (every node is a key, possibly with no pods)."""
        out: dict[str, list[Obj]] = {n: [] for n in nodes}
        if len(nodes) <= PER_NODE_LIMIT:
            for node in sorted(nodes):
                out[node] = self._pods([("fieldSelector", f"spec.nodeName={node}")])
            return out
        for pod in self._pods():
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            if node in out:
                out[node].append(pod)
        return out

    def pods_in(self, namespace: str, selector: str) -> list[Obj]:
        """The pods of ``namespace`` whose labels match ``selector`` (the agents': one list)."""
        path = f"/api/v1/namespaces/{namespace}/pods"
        what = f"pods in namespace {namespace}"
        return self._guard(lambda: self._list(path, what, [("labelSelector", selector)]))

    def _pods(self, query: Iterable[tuple[str, str]] = ()) -> list[Obj]:
        return self._guard(lambda: self._list("/api/v1/pods", "pods", query))

    def pod(self, namespace: str, name: str) -> Obj:
        """Pod ``namespace/name``; :class:`InputError` when it does not exist."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        found = self._guard(lambda: self._one(path, f"pods {name} in namespace {namespace}"))
        if found is None:
            raise InputError(f"pod {namespace}/{name}", f"not found at {self.server}")
        return found

    def _guard(self, read: Callable[[], T]) -> T:
        try:
            return read()
        except _NotFound as e:
            raise UnavailableError(f"{self.server} does not serve {e}") from e


def open_cluster_reader(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    timeout: float = 10.0,
    list_resource_version: str | None = None,
) -> ClusterReader:
    """A reader configured like kubectl: ``kubeconfig``, else ``$KUBECONFIG`` or ``~/.kube/config``,
    else the pod's service account; ``context`` as kubectl's ``--context``."""
    from rte import __version__
    from rte.runtime.kubeclient import KUBECTL_ORDER, load_api_client

    api_client = load_api_client(
        kubeconfig,
        context=context,
        sources=KUBECTL_ORDER,
        qps=CLI_QPS,
        timeout=timeout,
        user_agent=f"rte-views/{__version__}",
    )
    return ClusterReader(api_client, list_resource_version=list_resource_version)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
