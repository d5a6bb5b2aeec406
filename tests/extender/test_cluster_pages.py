"""Listed NRT pages are read item by item from their bytes (``rte.consumer.nrtfile.list_page``),
never decoded whole into dicts, and read as the objects themselves would be."""

from __future__ import annotations

import copy
import json
import logging
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from rte.consumer.nrtfile import CompactReader, list_page
from rte.consumer.store import NRTStore
from rte.extender.watch import ClusterFeeds
from rte.model.nrt import from_nrt
from rte.runtime import reflector
from rte.testing.apiserver import FakeApiServer
from tests.helpers.extender import GI, nrt
from tests.helpers.waiting import wait_for

PLURAL = "noderesourcetopologies"
ZONES = [{"cpu": 4, "memory": 8 * GI}, {"cpu": 8, "memory": 16 * GI}]


def test_list_page_keeps_items_as_bytes_and_reads_other_shapes_whole() -> None:
    body = {"kind": "NodeResourceTopologyList", "metadata": {"continue": "t"}, "items": [{"a": 1}, 2]}
    metadata, items = list_page(json.dumps(body).encode())
    assert metadata == {"continue": "t"}
    assert all(isinstance(i, msgspec.Raw) for i in items)
    assert [msgspec.json.decode(i) for i in items] == [{"a": 1}, 2]
    assert list_page(b'{"metadata": [], "items": [{"a": 1}]}') == ({}, [{"a": 1}])  # decoded whole
    assert list_page(b'{"items": {"a": 1}}') == ({}, [])
    assert list_page(b"{}") == ({}, [])


def test_listed_pages_are_read_from_bytes_and_malformed_items_left_out(
    fake_apiserver: FakeApiServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = [nrt(f"worker-{i}", ZONES, pods=[]) for i in range(5)]
    for obj in good:
        fake_apiserver.create_object(PLURAL, obj)
    broken = copy.deepcopy(good[0])
    broken["metadata"] = {"name": "broken", "uid": "u-broken"}
    del broken["zones"][1]["name"]  # past the CRD check: stored directly
    fake_apiserver.storage.create(PLURAL, broken)
    impossible = copy.deepcopy(good[1])
    impossible["metadata"] = {"name": "impossible", "uid": "u-impossible"}
    impossible["zones"][1]["name"] = impossible["zones"][0]["name"]  # two zones of one name
    fake_apiserver.storage.create(PLURAL, impossible)
    whole_pages: list[bytes] = []

    def loads(data: Any) -> Any:
        if b"NodeResourceTopologyList" in (data if isinstance(data, bytes) else data.encode()):
            whole_pages.append(data)
        return json.loads(data)

    monkeypatch.setattr(reflector, "json", SimpleNamespace(loads=loads))
    store = NRTStore()
    service: Any = SimpleNamespace(nrt_listed=lambda: None)
    api_client = fake_apiserver.api_client()
    with caplog.at_level(logging.WARNING):
        feeds = ClusterFeeds(
            api_client, store, service, heartbeat_namespace=None, watch_pods=False, page_size=2
        ).start()  # three pages
        try:
            wait_for(lambda: feeds.reflectors[0].synced.is_set(), 10, "the NRT list")
        finally:
            feeds.stop()
            api_client.close()
    assert store.nodes() == [f"worker-{i}" for i in range(5)]
    for obj in good:
        assert store.get(obj["metadata"]["name"]) == from_nrt(obj)
    assert whole_pages == []  # each page was decoded whole into dicts before
    assert "malformed NodeResourceTopology broken" in caplog.text
    # Refused, counted, and the node refused with the reason (issue #23 item 7).
    assert store.rejected() == {
        "broken": "NodeResourceTopology broken refused: zones[1].name: required field is missing",
        "impossible": "NodeResourceTopology impossible refused:"
        " zones[1].name: zone 'node-0' is also zones[0]: zone names are unique",
    }
    assert store.rejections == 2


def test_the_watch_reader_remembers_no_node_names() -> None:
    # The extender's reader lives as long as the process: it keeps the texts NRTs share
    # (zone and resource names), not one entry per node.
    reader = CompactReader()
    read = [reader.read(nrt(f"worker-{i}", ZONES, pods=[])) for i in range(50)]
    assert [t.name for t in read] == [f"worker-{i}" for i in range(50)]
    assert read == [from_nrt(nrt(f"worker-{i}", ZONES, pods=[])) for i in range(50)]
    assert len(reader._texts) < 20  # was 50 names more
    assert read[0].zones is read[1].zones
