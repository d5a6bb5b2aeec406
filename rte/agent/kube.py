"""One configured ``kubernetes.client.ApiClient`` for the whole agent.

The client's defaults do not suit a DaemonSet that runs on every node for months:

* **No hidden retries.** urllib3 would silently re-send a GET or PUT after a read timeout and
  count nothing. Its retries are turned off; retrying lives in :mod:`rte.agent.retry`, with
  backoff, jitter, ``Retry-After`` and an honest count.
* **A timeout on every request.** The client's default is none, so one half-open connection
  could hang the publishing loop forever. Requests that pass their own (watches) keep it.
* **Client-side pacing.** A token bucket (``qps`` per second, bursts of ``2 x qps``) in front of
  every request, like client-go's QPS/burst, so a bug that loops cannot hammer the apiserver
  from every node at once.

The ``kubernetes`` package is imported lazily: ``rte dump`` and the consumer never pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rte import __version__
from rte.errors import ConfigError
from rte.runtime.ratelimit import TokenBucket

USER_AGENT = f"rte-agent/{__version__}"


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


def load_api_client(kubeconfig: str | None, *, qps: float = 5.0, timeout: float = 10.0) -> Any:
    """An ``ApiClient`` from ``kubeconfig`` (a path), else from the in-cluster service account.

    ``qps`` <= 0 turns pacing off. ``timeout`` (seconds) bounds connect and each read of a
    request that sets no timeout of its own. Raises :class:`ConfigError` when neither source
    works, naming the source and the reason in one line.
    """
    import urllib3
    import yaml
    from kubernetes import client, config

    cfg = client.Configuration()
    source = kubeconfig or "in-cluster service account"
    if kubeconfig and not os.path.isfile(kubeconfig):
        raise ConfigError(kubeconfig, "no such kubeconfig file")
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except config.ConfigException as e:
        hint = "" if kubeconfig else " (pass --kubeconfig when running outside a cluster)"
        raise ConfigError(source, f"cannot load the apiserver configuration: {e}{hint}") from e
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as e:
        # A file that is missing, unreadable or not a kubeconfig at all.
        raise ConfigError(source, f"not a usable kubeconfig: {type(e).__name__}: {e}") from e
    cfg.retries = False
    api_client = client.ApiClient(cfg)
    api_client.user_agent = USER_AGENT
    bucket = TokenBucket(qps, max(1, round(2 * qps))) if qps > 0 else None
    rest: Any = api_client.rest_client
    rest.pool_manager = _PacedPool(rest.pool_manager, bucket, urllib3.Timeout(connect=timeout, read=timeout))
    return api_client


def raw_get(
    api_client: Any,
    path: str,
    query: Sequence[tuple[str, str | int | bool]] = (),
    *,
    timeout: float | tuple[float, float] | None = None,
) -> Any:
    """GET ``path`` through ``api_client`` and return the undecoded urllib3 response.

    The agent reads only two core objects (its own Node and the pods bound to it); going through
    the client's generic request path instead of ``CoreV1Api`` keeps the generated core client,
    about 20 MiB of resident memory, out of the process. A non-2xx answer raises the client's
    ``ApiException``, exactly as the generated methods do.
    """
    from kubernetes.client.exceptions import ApiException

    params = [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in query]
    request = api_client.param_serialize(
        method="GET",
        resource_path=path,
        query_params=params,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(*request, _request_timeout=timeout)
    if not 200 <= response.status <= 299:
        response.read()
        raise ApiException.from_response(http_resp=response, body=None, data=None)
    return response.response
