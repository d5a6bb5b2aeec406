"""The kubernetes client's transport without its generated ``ApiClient`` (and without pydantic).

The agent speaks JSON to the apiserver through :func:`rte.runtime.kubeclient.raw_get` and
:func:`~rte.runtime.kubeclient.raw_json_request`: of ``kubernetes.client.ApiClient`` it uses
``param_serialize`` and ``call_api`` only, never a model class. Importing ``api_client`` loads
pydantic (its ``ApiResponse`` is a pydantic model, built at import), ``dateutil``,
``multiprocessing.pool`` and the models package: 10 MiB of the agent's resident memory, a sixth
of it (docs/performance.md, "Agent memory"). :class:`LeanApiClient` does what those two methods
do, over the same ``Configuration`` (in-cluster or kubeconfig, token refresh included) and the
same ``RESTClientObject`` (TLS, proxies, timeouts, the ``ApiException`` on failure), which import
no pydantic.

Followed: ``kubernetes/client/api_client.py`` of the installed client (37.x),
``ApiClient.param_serialize`` (default headers, auth settings, the URL), ``parameters_to_url_query``
(booleans lowercased, values quoted with ``urllib.parse.quote``, keys as they are),
``update_params_for_auth``/``_apply_auth_params`` and ``call_api``.
``tests/runtime/test_restclient.py`` holds the requests equal to the generated client's, so a
client release that changes them fails there.

Bodies must already be JSON values (dicts, lists, strings, numbers, booleans, None), which is
all rte sends; the generated client would also turn model objects and datetimes into JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from rte import __version__

RequestSerialized = tuple[str, str, dict[str, str], Any, Any]
"""(method, url, headers, body, post_params): what ``param_serialize`` returns for ``call_api``."""


def url_query(params: Iterable[tuple[str, Any]]) -> str:
    """The query string the generated client builds from ``params`` (no collection formats)."""
    parts = []
    for key, value in params:
        if isinstance(value, bool):
            value = str(value).lower()
        parts.append(f"{key}={quote(str(value))}")
    return "&".join(parts)


class LeanApiClient:
    """``param_serialize``, ``call_api``, ``close`` and ``user_agent`` of ``ApiClient``, nothing else.

    Hand it to code that needs a generated API class through :func:`generated_api_client`.
    """

    def __init__(self, configuration: Any) -> None:
        from kubernetes.client import rest

        self.configuration = configuration
        self.rest_client: Any = rest.RESTClientObject(configuration)
        self.default_headers: dict[str, str] = {}
        self.user_agent = f"rte/{__version__}"

    @property
    def user_agent(self) -> str:
        return self.default_headers["User-Agent"]

    @user_agent.setter
    def user_agent(self, value: str) -> None:
        self.default_headers["User-Agent"] = value

    def param_serialize(
        self,
        method: str,
        resource_path: str,
        query_params: Iterable[tuple[str, Any]] | None = None,
        header_params: Mapping[str, str] | None = None,
        body: Any = None,
        auth_settings: Iterable[str] | None = None,
    ) -> RequestSerialized:
        """The request ``ApiClient.param_serialize`` builds for the same arguments."""
        headers = {**(header_params or {}), **self.default_headers}
        query = list(query_params or ())
        settings = self.configuration.auth_settings()
        for name in auth_settings or ():
            setting = settings.get(name)
            if setting:
                _apply_auth(setting, headers, query)
        url = self.configuration.host + resource_path
        if query:
            url += "?" + url_query(query)
        return method, url, headers, body, None

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Mapping[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        """The ``RESTResponse`` of the request (its urllib3 response unread)."""
        return self.rest_client.request(
            method,
            url,
            headers=dict(header_params or {}),
            body=body,
            post_params=post_params,
            _request_timeout=_request_timeout,
        )

    def close(self) -> None:
        self.rest_client.pool_manager.clear()


def _apply_auth(setting: Mapping[str, Any], headers: dict[str, str], query: list[tuple[str, Any]]) -> None:
    """One of ``Configuration.auth_settings()`` applied as ``ApiClient._apply_auth_params`` does."""
    where = setting["in"]
    if where == "header":
        if setting["type"] != "http-signature":
            headers[setting["key"]] = setting["value"]
    elif where == "query":
        query.append((setting["key"], setting["value"]))
    elif where == "cookie":
        value = quote(str(setting["value"]), safe="!#$%&'()*+-./:<=>?@[]^_`{|}~%+/=")
        cookie = f"{setting['key']}={value}"
        headers["Cookie"] = f"{headers['Cookie']}; {cookie}" if "Cookie" in headers else cookie
    else:
        raise ValueError(f"authentication setting {setting.get('key')!r}: unknown place {where!r}")


def generated_api_client(api_client: Any) -> Any:
    """An ``ApiClient`` for the generated API classes (a Lease's ``CoordinationV1Api``) that
    sends through ``api_client``'s connection pool (its pacing and timeouts) and with its user
    agent. A full ``ApiClient`` is returned as it is; a lean one loads the generated client then.
    """
    if not isinstance(api_client, LeanApiClient):
        return api_client
    from kubernetes.client import ApiClient

    full = ApiClient(api_client.configuration)
    full.rest_client = api_client.rest_client
    full.user_agent = api_client.user_agent
    return full
