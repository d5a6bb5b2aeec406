"""The list + watch reflector against the apiserver double: a relist on demand."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client

from rte.runtime.reflector import Obj, Reflector, _events
from rte.testing.apiserver import FakeApiServer
from tests.helpers.waiting import wait_for


def test_relist_ends_the_watch_and_delivers_a_list_begun_after_the_call(
    fake_apiserver: FakeApiServer, kube_api_client: Any
) -> None:
    lists: list[list[str]] = []

    def on_list(items: list[Obj]) -> None:
        lists.append(sorted(i["metadata"]["name"] for i in items))

    core = client.CoreV1Api(kube_api_client)
    reflector = Reflector(
        "pods", core.list_pod_for_all_namespaces, on_list=on_list, on_event=lambda kind, obj: None
    ).start()
    try:
        wait_for(reflector.synced.is_set, 10, "the first list")
        assert fake_apiserver.wait_for_watches(1)
        fake_apiserver.add_pod("bound-just-now", node_name="worker-1")
        ticket = reflector.relist()
        wait_for(lambda: reflector.listed >= ticket, 10, "the relist")
        assert lists == [[], ["bound-just-now"]]
        assert reflector.failures == 0 and reflector.lists == 2
        assert fake_apiserver.wait_for_watches(1)  # watching again from the new list
    finally:
        reflector.stop()


def test_read_item_turns_each_page_into_what_on_list_receives(
    fake_apiserver: FakeApiServer, kube_api_client: Any
) -> None:
    for i in range(5):
        fake_apiserver.add_pod(f"p{i}", node_name="worker-1")
    pages_read: list[int] = []
    lists: list[list[Any]] = []

    def read(obj: Obj) -> tuple[str, int]:
        pages_read.append(len(lists))
        return ("read", int(obj["metadata"]["name"][1:]))

    core = client.CoreV1Api(kube_api_client)
    reflector = Reflector(
        "pods",
        core.list_pod_for_all_namespaces,
        on_list=lists.append,
        on_event=lambda kind, obj: None,
        read_item=read,
        page_size=2,  # three pages
    ).start()
    try:
        wait_for(reflector.synced.is_set, 10, "the first list")
        assert sorted(lists[0]) == [("read", i) for i in range(5)]
        assert len(pages_read) == 5  # once per object, before on_list
    finally:
        reflector.stop()


class _Chunks:
    """A streaming response handing out fixed chunks, as urllib3's ``stream`` does."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amt: Any = None, decode_content: bool = False) -> Any:
        return iter(self.chunks)


def test_watch_events_are_cut_at_newlines_whatever_the_chunks() -> None:
    """Many events in one chunk, an event cut across chunks, blank lines, a chunk without a
    newline: the same events in order, the unfinished last line held back."""
    events = [
        {"type": "MODIFIED", "object": {"metadata": {"name": f"n{i}"}, "pad": "x" * i}} for i in range(40)
    ]
    text = b"".join(json.dumps(e).encode() + (b"\n\n" if i % 7 == 0 else b"\n") for i, e in enumerate(events))
    text += b'{"type": "ADDED"'  # unfinished: never yielded
    for size in (1, 5, 64, 1000, len(text)):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert list(_events(_Chunks(chunks))) == events, size
