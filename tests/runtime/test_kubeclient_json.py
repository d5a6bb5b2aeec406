"""``raw_json_request``: the publisher's plain requests answer as the generated
``CustomObjectsApi`` methods they replace (same objects, same ``ApiException``s)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from rte.model.nrt import GROUP, PLURAL, VERSION
from rte.runtime.kubeclient import raw_json_request
from rte.testing.apiserver import FakeApiServer

PATH = f"/apis/{GROUP}/{VERSION}/{PLURAL}"
MERGE_PATCH = "application/merge-patch+json"


def _nrt(name: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "labels": {"a": "1"}},
        "zones": [],
        "topologyPolicies": ["None"],
    }


def _plain(obj: dict[str, Any]) -> dict[str, Any]:
    """Without what differs between two objects created one after the other."""
    varying = ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields")
    meta = {k: v for k, v in obj["metadata"].items() if k not in varying}
    return {**obj, "metadata": meta}


def _managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["manager"], m["operation"]) for m in obj["metadata"].get("managedFields") or ()]


def test_create_get_and_merge_patch_answer_as_the_generated_methods(
    fake_apiserver: FakeApiServer, kube_api_client: Any
) -> None:
    objects = client.CustomObjectsApi(kube_api_client)
    want = objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, _nrt("g1"), field_manager="t")
    got = raw_json_request(kube_api_client, "POST", PATH, query=[("fieldManager", "t")], body=_nrt("p1"))
    assert _plain(got) == _plain(want)
    assert _managers(got) == _managers(want) == [("t", "Update")]
    assert _plain(raw_json_request(kube_api_client, "GET", f"{PATH}/p1")) == _plain(
        objects.get_cluster_custom_object(GROUP, VERSION, PLURAL, "g1")
    )
    patch = {"metadata": {"labels": {"a": None, "b": "2"}}}
    want = objects.patch_cluster_custom_object(
        GROUP, VERSION, PLURAL, "g1", patch, field_manager="t", _content_type=MERGE_PATCH
    )
    got = raw_json_request(
        kube_api_client,
        "PATCH",
        f"{PATH}/p1",
        query=[("fieldManager", "t")],
        body=patch,
        content_type=MERGE_PATCH,
    )
    assert got["metadata"]["labels"] == {"b": "2"}
    assert _plain(got) == _plain(want)
    assert _managers(got) == _managers(want)


@pytest.mark.parametrize("method", ["GET", "PATCH"])
def test_a_missing_object_raises_the_same_api_exception(
    fake_apiserver: FakeApiServer, kube_api_client: Any, method: str
) -> None:
    objects = client.CustomObjectsApi(kube_api_client)
    with pytest.raises(ApiException) as generated:
        if method == "GET":
            objects.get_cluster_custom_object(GROUP, VERSION, PLURAL, "none")
        else:
            objects.patch_cluster_custom_object(GROUP, VERSION, PLURAL, "none", {}, _content_type=MERGE_PATCH)
    with pytest.raises(ApiException) as plain:
        raw_json_request(
            kube_api_client,
            method,
            f"{PATH}/none",
            body=None if method == "GET" else {},
            content_type=MERGE_PATCH,
        )
    assert plain.value.status == generated.value.status == 404
    assert plain.value.reason == generated.value.reason
    assert plain.value.body == generated.value.body
