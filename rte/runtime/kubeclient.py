"""One way to build a ``kubernetes.client.ApiClient`` for every rte command that talks to a cluster.

Where the configuration comes from:

* an explicit kubeconfig (``--kubeconfig``) always wins; it must exist;
* otherwise the caller's ``sources`` are tried in order, each only if it is present:
  ``IN_CLUSTER`` when ``KUBERNETES_SERVICE_HOST`` is set (a pod's service account), and
  ``DEFAULT_KUBECONFIG`` when ``$KUBECONFIG`` names an existing file or ``~/.kube/config``
  exists, as kubectl looks for it; ``KUBECONFIG_VARIABLE`` when ``$KUBECONFIG`` is set. The
  default order is kubectl's (a kubeconfig, then in-cluster); the agent, a DaemonSet, takes
  in-cluster and then ``$KUBECONFIG`` (:data:`AGENT_SOURCES`), so that a laptop's
  ``~/.kube/config`` is never picked up by accident but a kubeconfig named on purpose is
  honoured, as every other command honours it; the extender prefers in-cluster and falls back to
  the kubeconfig.
* ``context`` selects a kubeconfig context, like kubectl's ``--context``.

The client's defaults do not suit a daemon that runs for months, so every client gets:

* **no hidden retries**: urllib3 would silently re-send a GET or PUT after a read timeout and
  count nothing. Retrying belongs to the callers (backoff, jitter, ``Retry-After``, a count);
* **a timeout on every request** that sets none of its own (watches set theirs): the client's
  default is none, so one half-open connection could hang a loop forever;
* **client-side pacing**: a token bucket (``qps`` per second, bursts of ``2 x qps``) in front of
  every request, like client-go's QPS/burst, so a bug that loops cannot hammer the apiserver.

Every failure is one :class:`~rte.errors.ConfigError` naming the kubeconfig (and context) or the
in-cluster source. The ``kubernetes`` package is imported only when a client is built, and then
only its ``client`` and ``config`` parts (:mod:`rte.runtime.kubeimport`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any

from rte import __version__
from rte.errors import ConfigError
from rte.runtime.kubeimport import kubernetes_parts_on_demand
from rte.runtime.ratelimit import TokenBucket


class Source(Enum):
    """Where the configuration may come from when no kubeconfig is given explicitly."""

    IN_CLUSTER = "in-cluster service account"
    DEFAULT_KUBECONFIG = "default kubeconfig"
    KUBECONFIG_VARIABLE = "$KUBECONFIG"
    """Only a kubeconfig named by ``$KUBECONFIG`` (never ``~/.kube/config``)."""


KUBECTL_ORDER = (Source.DEFAULT_KUBECONFIG, Source.IN_CLUSTER)
"""How kubectl (client-go's default loading rules) looks: a kubeconfig first, then in-cluster."""
AGENT_SOURCES = (Source.IN_CLUSTER, Source.KUBECONFIG_VARIABLE)
"""``rte run``: the service account in a pod; elsewhere only a kubeconfig named by ``$KUBECONFIG``."""


class _PacedPool:
    """Stands in for the REST client's urllib3 ``PoolManager``: paces and times out each request.

    The generated client ends every call in ``rest_client.pool_manager.request(method, url, ...,
    timeout=...)``, so this is the one place that sees all traffic, typed calls and raw ones alike.
    """

    def __init__(self, inner: Any, bucket: TokenBucket | None, timeout: Any) -> None:
        self._inner = inner
        self._bucket = bucket
        self._timeout = timeout

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self._timeout
        if self._bucket is not None:
            self._bucket.acquire()
        return self._inner.request(method, url, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def default_kubeconfig() -> str | None:
    """kubectl's default: ``$KUBECONFIG`` (a ``:``-separated list) when one of its files exists,
    else ``~/.kube/config`` when it exists, else None. Read at each call, never at import."""
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        paths = [os.path.expanduser(p) for p in listed.split(os.pathsep) if p]
        return listed if any(os.path.isfile(p) for p in paths) else None
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.isfile(home) else None


def _first_listed(listed: str) -> str:
    """The first existing file of a ``:``-separated ``$KUBECONFIG``; a one-line error when none is."""
    paths = [os.path.expanduser(p) for p in listed.split(os.pathsep) if p]
    for path in paths:
        if os.path.isfile(path):
            return path
    raise ConfigError("$KUBECONFIG", f"no such kubeconfig file: {listed}")


def _absent(source: Source) -> str:
    if source is Source.IN_CLUSTER:
        return "not running in a pod (KUBERNETES_SERVICE_HOST is not set)"
    if source is Source.KUBECONFIG_VARIABLE:
        return "$KUBECONFIG is not set"
    return "no $KUBECONFIG or ~/.kube/config"


def _pick(kubeconfig: str | None, sources: Sequence[Source]) -> str | None:
    """The kubeconfig to load, or None for the in-cluster configuration."""
    if kubeconfig:
        if not os.path.isfile(kubeconfig):
            raise ConfigError(kubeconfig, "no such kubeconfig file")
        return kubeconfig
    for source in sources:
        if source is Source.IN_CLUSTER and os.environ.get("KUBERNETES_SERVICE_HOST"):
            return None
        if source is Source.DEFAULT_KUBECONFIG and (found := default_kubeconfig()) is not None:
            return found
        if source is Source.KUBECONFIG_VARIABLE and os.environ.get("KUBECONFIG"):
            return _first_listed(os.environ["KUBECONFIG"])
    name = sources[0].value if len(sources) == 1 else "Kubernetes configuration"
    reasons = "; ".join(_absent(s) for s in sources) or "no source allowed"
    raise ConfigError(name, f"{reasons}: pass --kubeconfig when running outside a cluster")


def load_api_client(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    sources: Sequence[Source] = KUBECTL_ORDER,
    qps: float = 5.0,
    timeout: float = 10.0,
    user_agent: str = f"rte/{__version__}",
    generated: bool = True,
) -> Any:
    """A configured ``ApiClient`` (see the module's docstring for where its configuration comes from).

    ``qps`` <= 0 turns pacing off. ``timeout`` (seconds) bounds connect and each read of a
    request that sets no timeout of its own. ``generated=False``: a
    :class:`~rte.runtime.restclient.LeanApiClient`, enough for :func:`raw_get`,
    :func:`raw_json_request` and :func:`raw_list_call` and 10 MiB lighter (no pydantic); the
    generated API classes need :func:`~rte.runtime.restclient.generated_api_client` of it.
    """
    import urllib3
    import yaml

    kubernetes_parts_on_demand()  # before the first kubernetes import of the process
    from kubernetes import client
    from kubernetes.config.config_exception import ConfigException

    path = _pick(kubeconfig, sources)
    if path is None:
        if context:
            raise ConfigError(
                "--context", f"{context!r} needs a kubeconfig; the in-cluster configuration has none"
            )
        where = Source.IN_CLUSTER.value
    else:
        where = f"{path} (context {context})" if context else path
    cfg = client.Configuration()
    try:
        # Each source's own module: the in-cluster one does not load kube_config's authentication
        # plugins (requests, oauthlib, google-auth; rte.runtime.kubeimport).
        if path is None:
            from kubernetes.config.incluster_config import load_incluster_config

            load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            # The lean client's callers (the agent) read a kubeconfig of static credentials
            # themselves: kube_config's imports are 15 MiB (rte.runtime.kubeconfig).
            from rte.runtime.kubeconfig import load_static_kubeconfig

            if generated or not load_static_kubeconfig(path, context or None, cfg):
                from kubernetes.config.kube_config import load_kube_config

                load_kube_config(config_file=path, context=context or None, client_configuration=cfg)  # type: ignore[no-untyped-call]
    except ConfigException as e:
        raise ConfigError(where, f"cannot load the apiserver configuration: {e}") from e
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as e:
        # A file that is unreadable or not a kubeconfig at all.
        raise ConfigError(where, f"not a usable kubeconfig: {type(e).__name__}: {e}") from e
    cfg.retries = False
    api_client: Any
    if generated:
        api_client = client.ApiClient(cfg)
    else:
        from rte.runtime.restclient import LeanApiClient

        api_client = LeanApiClient(cfg)
    api_client.user_agent = user_agent
    bucket = TokenBucket(qps, max(1, round(2 * qps))) if qps > 0 else None
    rest: Any = api_client.rest_client
    rest.pool_manager = _PacedPool(rest.pool_manager, bucket, urllib3.Timeout(connect=timeout, read=timeout))
    return api_client


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
"""Where a pod finds its own namespace (what kubectl uses in-cluster)."""


def default_namespace(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    sources: Sequence[Source] = KUBECTL_ORDER,
) -> str:
    """The namespace kubectl would use without ``-n``: the context's, else ``default``.

    The same configuration as :func:`load_api_client` is picked (``context``, or the
    kubeconfig's current context); in a pod, the service account's namespace.
    """
    import yaml

    path = _pick(kubeconfig, sources)
    if path is None:
        try:
            with open(SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as f:
                return f.read().strip() or "default"
        except OSError:
            return "default"
    kubernetes_parts_on_demand()
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import list_kube_config_contexts

    try:
        contexts, current = list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, ValueError, TypeError, KeyError, yaml.YAMLError) as e:
        raise ConfigError(path, f"not a usable kubeconfig: {type(e).__name__}: {e}") from e
    chosen = next((c for c in contexts or () if c.get("name") == context), None) if context else current
    if context and chosen is None:
        raise ConfigError(f"{path} (context {context})", "no such context")
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else "default"


def raw_get(
    api_client: Any,
    path: str,
    query: Sequence[tuple[str, str | int | bool]] = (),
    *,
    timeout: float | tuple[float, float] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """GET ``path`` through ``api_client`` and return the undecoded urllib3 response.

    Going through the client's generic request path instead of a generated API class (the
    agent reads only its own Node and the pods bound to it) keeps the generated core client,
    about 20 MiB of resident memory, out of the process. A non-2xx answer raises the client's
    ``ApiException``, exactly as the generated methods do.
    """
    from kubernetes.client.exceptions import ApiException

    params = [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in query]
    request = api_client.param_serialize(
        method="GET",
        resource_path=path,
        query_params=params,
        header_params={"Accept": "application/json", **(headers or {})},
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(*request, _request_timeout=timeout)
    if not 200 <= response.status <= 299:
        response.read()
        raise ApiException.from_response(http_resp=response, body=None, data=None)
    return response.response


def raw_json_request(
    api_client: Any,
    method: str,
    path: str,
    *,
    query: Sequence[tuple[str, str]] = (),
    body: object = None,
    content_type: str = "application/json",
) -> Any:
    """``method`` ``path`` through ``api_client`` with a JSON ``body``; the decoded JSON answer.

    What the generated ``CustomObjectsApi`` methods do for an ``object`` (same request, same
    ``ApiException`` with the answer's body on a non-2xx status), without loading that class,
    1.5 MiB of the agent's resident memory (docs/performance.md, "Agent memory").
    """
    from kubernetes.client.exceptions import ApiException

    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    request = api_client.param_serialize(
        method=method,
        resource_path=path,
        query_params=list(query),
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(*request)
    response.read()
    if not 200 <= response.status <= 299:
        text = response.data.decode("utf-8", "replace") if response.data else None
        raise ApiException.from_response(http_resp=response, body=text, data=None)
    return json.loads(response.data) if response.data else None


_LIST_QUERY = {
    "limit": "limit",
    "_continue": "continue",
    "watch": "watch",
    "resource_version": "resourceVersion",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "timeout_seconds": "timeoutSeconds",
}
"""The generated ``list_*`` methods' keywords (as :class:`~rte.runtime.reflector.Reflector` passes
them) and the query parameters they stand for."""


def raw_list_call(
    api_client: Any,
    path: str,
    query: Sequence[tuple[str, str | int | bool]] = (),
    headers: Mapping[str, str] | None = None,
) -> Callable[..., Any]:
    """A ``list_*``-shaped callable (the client's list keywords, the raw response back) over a
    plain GET of ``path`` with ``query`` besides: what a reflector needs, without the generated
    API class of the resource. ``CoreV1Api`` alone is 20 MiB of resident memory and a second of
    import (``python -m bench.bench_serve_start --client-import``). ``headers`` go with every
    request (the agent's impersonation of its own node: rte.agent.watch.podwatch)."""

    def call(**kwargs: Any) -> Any:
        params = [
            *query,
            *((_LIST_QUERY[k], v) for k, v in kwargs.items() if k in _LIST_QUERY and v is not None),
        ]
        return raw_get(api_client, path, params, timeout=kwargs.get("_request_timeout"), headers=headers)

    return call
