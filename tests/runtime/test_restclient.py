"""``LeanApiClient``: the agent's requests without the generated ``ApiClient`` (and pydantic).

The requests it builds are held equal to the installed kubernetes client's
``ApiClient.param_serialize`` (kubernetes/client/api_client.py) for the same arguments, so a
client release that changes its URLs, headers or authentication fails here first; the requests
it sends go through the apiserver double.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from rte.model.nrt import GROUP, PLURAL, VERSION
from rte.runtime.kubeclient import load_api_client, raw_json_request, raw_list_call
from rte.runtime.restclient import LeanApiClient, generated_api_client
from rte.testing.apiserver import FakeApiServer
from tests.helpers.in_pod import run_in_pod

PATH = f"/apis/{GROUP}/{VERSION}/{PLURAL}"


@pytest.fixture
def kubeconfig(fake_apiserver: FakeApiServer, tmp_path: Path) -> Path:
    return fake_apiserver.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def lean(kubeconfig: Path) -> Iterator[Any]:
    client = load_api_client(str(kubeconfig), qps=0, user_agent="rte-test/1", generated=False)
    try:
        yield client
    finally:
        client.close()


QUERIES: list[list[tuple[str, Any]]] = [
    [],
    [("fieldSelector", "spec.nodeName=worker-1"), ("limit", 500), ("watch", True)],
    [("continue", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTJ9/+=="), ("allowWatchBookmarks", False)],
    [("labelSelector", "a in (x,y),b!=z"), ("timeoutSeconds", 300), ("resourceVersion", "0")],
    [("fieldManager", "rte agent"), ("name", "ü/é?&#")],
]


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
@pytest.mark.parametrize("method", ["GET", "POST", "PATCH"])
def test_requests_are_those_the_generated_client_builds(
    lean: Any, method: str, query: list[tuple[str, Any]]
) -> None:
    full = generated_api_client(lean)
    assert not isinstance(full, LeanApiClient)
    headers = {"Accept": "application/json", "Impersonate-User": "system:node:worker-1"}
    body = {"metadata": {"name": "worker-1", "labels": {"a": None}}, "zones": [{"name": "node-0"}]}
    args = {
        "method": method,
        "resource_path": f"{PATH}/worker-1",
        "header_params": headers,
        "body": None if method == "GET" else body,
        "auth_settings": ["BearerToken"],
    }
    got = lean.param_serialize(query_params=list(query), **{**args, "header_params": dict(headers)})
    want = full.param_serialize(query_params=list(query), **{**args, "header_params": dict(headers)})
    assert got == want
    assert got[2]["User-Agent"] == "rte-test/1"
    assert got[2]["authorization"].startswith("Bearer ")


def test_json_requests_and_errors_through_the_apiserver_double(lean: Any) -> None:
    nrt = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeResourceTopology", "metadata": {"name": "n1"}}
    nrt |= {"zones": [], "topologyPolicies": ["None"]}
    created = raw_json_request(lean, "POST", PATH, query=[("fieldManager", "t")], body=nrt)
    assert created["metadata"]["managedFields"][0]["manager"] == "t"
    patched = raw_json_request(
        lean,
        "PATCH",
        f"{PATH}/n1",
        body={"metadata": {"labels": {"b": "2"}}},
        content_type="application/merge-patch+json",
    )
    assert patched["metadata"]["labels"] == {"b": "2"}
    listed = raw_list_call(lean, PATH, [("fieldSelector", "metadata.name=n1")])(limit=10)
    assert [o["metadata"]["name"] for o in __import__("json").loads(listed.data)["items"]] == ["n1"]
    with pytest.raises(ApiException) as missing:
        raw_json_request(lean, "GET", f"{PATH}/none")
    assert missing.value.status == 404 and missing.value.body


def test_a_generated_api_class_runs_over_the_lean_clients_pool(
    lean: Any, fake_apiserver: FakeApiServer
) -> None:
    from kubernetes import client

    full = generated_api_client(lean)
    assert full.rest_client is lean.rest_client  # the pacing and timeouts of the agent's client
    assert full.user_agent == "rte-test/1"
    assert generated_api_client(full) is full
    items = client.CustomObjectsApi(full).list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]
    assert items == []


_NO_PYDANTIC = """
import sys
from rte.runtime.kubeclient import load_api_client, raw_json_request
api = load_api_client(sys.argv[1], generated=False)
raw_json_request(api, "GET", "/apis/{group}/{version}/{plural}")
heavy = ("pydantic", "pydantic_core", "dateutil", "requests", "oauthlib", "google")
generated = ("kubernetes.client.api", "kubernetes.client.models", "kubernetes.config.kube_config")
print(sorted({{m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(generated)}}))
"""


def test_the_lean_client_loads_no_pydantic_nor_the_generated_client(kubeconfig: Path) -> None:
    probe = _NO_PYDANTIC.format(group=GROUP, version=VERSION, plural=PLURAL)
    run = subprocess.run([sys.executable, "-c", probe, str(kubeconfig)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[0] == "[]"


_IN_CLUSTER = """
import sys
from rte.runtime.kubeimport import kubernetes_parts_on_demand
assert kubernetes_parts_on_demand()  # as load_api_client does, before this probe's own import
import kubernetes.config.incluster_config as incluster
incluster.SERVICE_TOKEN_FILENAME, incluster.SERVICE_CERT_FILENAME = sys.argv[1:3]
from rte.runtime.kubeclient import Source, load_api_client
api = load_api_client(sources=(Source.IN_CLUSTER,), generated=False, user_agent="rte-agent/t")
method, url, headers, _, _ = api.param_serialize("GET", "/api/v1/pods", [("watch", True)], {},
                                                auth_settings=["BearerToken"])
print(url, headers["authorization"], headers["User-Agent"])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "requests", "dateutil")))
"""


def test_in_a_pod_the_lean_client_sends_the_service_accounts_token(tmp_path: Path) -> None:
    # The deployed path: load_incluster_config's host, CA and token (with its refresh hook, which
    # Configuration.auth_settings() calls) serve the lean client as they serve ApiClient.
    run = run_in_pod(tmp_path, _IN_CLUSTER)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:2] == [
        "https://10.96.0.1:443/api/v1/pods?watch=true bearer t0ken rte-agent/t",  # the client's spelling
        "[]",
    ]
