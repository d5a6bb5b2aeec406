"""``raw_list_call``: a plain GET standing in for a generated ``list_*`` method (reflectors)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from rte.runtime.kubeclient import raw_list_call
from rte.runtime.reflector import Obj, Reflector
from rte.testing.apiserver import FakeApiServer
from tests.helpers.waiting import wait_for


def _names(response: Any) -> tuple[list[str], str | None]:
    body = json.loads(response.data)
    return [i["metadata"]["name"] for i in body["items"]], body["metadata"].get("continue") or None


def test_pages_and_selectors_as_the_generated_method_answers_them(
    fake_apiserver: FakeApiServer, kube_api_client: Any
) -> None:
    for i in range(5):
        fake_apiserver.add_pod(f"p{i}", node_name="worker-1" if i % 2 else "worker-2")
    generated = client.CoreV1Api(kube_api_client).list_pod_for_all_namespaces
    plain = raw_list_call(kube_api_client, "/api/v1/pods")
    kwargs: dict[str, Any] = {"limit": 2, "_preload_content": False, "_request_timeout": 5}
    pages: list[list[str]] = []
    token: str | None = None
    while True:
        want = _names(generated(**kwargs, **({"_continue": token} if token else {})))
        got = _names(plain(**kwargs, _continue=token))  # None: left out of the query
        assert got == want
        pages.append(got[0])
        if (token := got[1]) is None:
            break
    assert sorted(n for page in pages for n in page) == [f"p{i}" for i in range(5)]
    assert max(map(len, pages)) == 2
    selected = raw_list_call(kube_api_client, "/api/v1/pods", [("fieldSelector", "spec.nodeName=worker-1")])
    assert sorted(_names(selected(_preload_content=False))[0]) == ["p1", "p3"]


def test_an_error_status_raises_the_clients_exception(kube_api_client: Any) -> None:
    call = raw_list_call(kube_api_client, "/apis/example.com/v1/nothings")
    with pytest.raises(ApiException) as raised:
        call(_preload_content=False)
    assert raised.value.status == 404


def test_a_reflector_lists_and_watches_through_it(
    fake_apiserver: FakeApiServer, kube_api_client: Any
) -> None:
    events: list[tuple[str, str]] = []
    listed: list[list[str]] = []

    def on_list(items: list[Obj]) -> None:
        listed.append(sorted(i["metadata"]["name"] for i in items))

    fake_apiserver.add_pod("before", node_name="worker-1")
    reflector = Reflector(
        "pods",
        raw_list_call(kube_api_client, "/api/v1/pods"),
        on_list=on_list,
        on_event=lambda kind, obj: events.append((kind, obj["metadata"]["name"])),
    ).start()
    try:
        wait_for(reflector.synced.is_set, 10, "the first list")
        assert fake_apiserver.wait_for_watches(1)
        fake_apiserver.add_pod("after", node_name="worker-2")
        wait_for(lambda: ("ADDED", "after") in events, 10, "the watch event")
        assert listed == [["before"]] and reflector.failures == 0
    finally:
        reflector.stop()
