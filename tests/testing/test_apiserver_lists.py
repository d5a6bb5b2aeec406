"""Lists from the apiserver double: each object encoded once per version, pages without copying
the whole collection, and what is listed still follows every change."""

from __future__ import annotations

import copy
import json
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client

from rte.testing.apiserver import FakeApiServer, storage
from tests.testing.test_apiserver import GROUP, PLURAL, V1, V2, example_nrt


def _list(api_client: Any, version: str = V2, **kwargs: Any) -> dict[str, Any]:
    objects = client.CustomObjectsApi(api_client)
    result: dict[str, Any] = objects.list_cluster_custom_object(GROUP, version, PLURAL, **kwargs)
    return result


def _names(listing: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


def test_a_page_copies_only_its_own_objects(
    fake_apiserver: FakeApiServer, kube_api_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(30):
        fake_apiserver.create_object(PLURAL, example_nrt(f"worker-{i:02d}"))
    copied = 0

    def counting(obj: Any, memo: Any = None) -> Any:
        nonlocal copied
        copied += isinstance(obj, dict) and obj.get("kind") == "NodeResourceTopology"
        return copy.deepcopy(obj, memo)

    # The storage's copies of NRTs only (each request reads the CRD too).
    monkeypatch.setattr(storage, "copy", SimpleNamespace(deepcopy=counting))
    first = _list(kube_api_client, limit=5)
    assert copied == 5  # was 30 a page: every page copied (and sorted) the whole collection
    copied = 0
    again = _list(kube_api_client, limit=5)
    assert copied == 0 and again["items"] == first["items"]  # encoded once, served again
    rest = _list(kube_api_client, limit=25, _continue=first["metadata"]["continue"])
    assert _names(first) + _names(rest) == [f"worker-{i:02d}" for i in range(30)]


def test_listed_bytes_are_what_encoding_the_whole_list_gives(fake_apiserver: FakeApiServer) -> None:
    for i in range(3):
        fake_apiserver.create_object(PLURAL, example_nrt(f"worker-{i}"))
    fake_apiserver.add_pod("p", node_name="worker-1")
    auth = {"Authorization": f"Bearer {fake_apiserver.token}"}
    for path in (f"/apis/{GROUP}/{V1}/{PLURAL}?limit=2", "/api/v1/pods"):
        request = urllib.request.Request(fake_apiserver.url + path, headers=auth)
        with urllib.request.urlopen(request) as answer:
            data = answer.read()
        assert data == json.dumps(json.loads(data)).encode()
    pods = json.loads(data)
    assert pods["kind"] == "PodList" and "apiVersion" not in pods["items"][0]


def test_lists_follow_updates_and_deletions_in_every_version(
    fake_apiserver: FakeApiServer, kube_api_client: Any
) -> None:
    for i in range(3):
        fake_apiserver.create_object(PLURAL, example_nrt(f"worker-{i}"))
    for version in (V1, V2):
        assert _list(kube_api_client, version)["items"][0]["apiVersion"] == f"{GROUP}/{version}"
    objects = client.CustomObjectsApi(kube_api_client)
    changed = example_nrt("worker-1")
    changed["topologyPolicies"] = ["None"]
    stored = fake_apiserver.get_object(PLURAL, "worker-1")
    assert stored is not None
    changed["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", changed)
    objects.delete_cluster_custom_object(GROUP, V2, PLURAL, "worker-0")
    fake_apiserver.create_object(PLURAL, example_nrt("worker-00"))
    for version in (V1, V2):
        listing = _list(kube_api_client, version)
        assert _names(listing) == ["worker-00", "worker-1", "worker-2"]
        assert listing["items"][1]["topologyPolicies"] == ["None"]
        now = fake_apiserver.get_object(PLURAL, "worker-1")
        assert now is not None and listing["items"][1] == {**now, "apiVersion": f"{GROUP}/{version}"}
