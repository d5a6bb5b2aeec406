"""The first request after start decides from a warm index: every node's view and decision-table
row is built before ``/readyz`` says ready, so that request builds none (counted, not timed)."""

from __future__ import annotations

import gc
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import rte.consumer.kernel.rows as rows_module
import rte.consumer.kernel.table as table_module
from rte.consumer.store import MODIFIED
from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings
from rte.testing.apiserver import FakeApiServer
from tests.helpers.extender import GI, PROFILE, Client, nrt, pod

NODES = [f"worker-{i:02d}" for i in range(30)]
POD = pod("app", {"cpu": 2, "memory": 1 * GI})
PLURAL = "noderesourcetopologies"


@pytest.fixture
def rows_built(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every view whose decision-table row was extracted, in order (a whole row or, for a view
    derived from one already extracted, its amounts only; memoised reads are not counted)."""
    built: list[Any] = []
    row_data = table_module.row_data

    def counting(view: Any) -> Any:
        if rows_module.ROW_KEY not in view.local:  # not read from the view's memo
            built.append(view)
        return row_data(view)

    monkeypatch.setattr(table_module, "row_data", counting)
    return built


def _wait_ready(app: ExtenderApp) -> None:
    deadline = time.monotonic() + 10
    while not app.service.ready():
        assert time.monotonic() < deadline, app.service.not_ready_reason()
        time.sleep(0.01)


def _settings(tmp_path: Path) -> Any:
    path = tmp_path / "nrts.json"
    items = [nrt(name, [{"cpu": 4, "memory": 8 * GI}] * 2) for name in NODES]
    path.write_text(json.dumps({"kind": "NodeResourceTopologyList", "items": items}))
    return extender_settings(
        listen="127.0.0.1:0",
        nrt_files=[str(path)],
        cache_resync_period="5s",  # OverReserve, as deployed
        scheduler_profiles=[PROFILE],
        lease_namespace="",
    )


@pytest.fixture
def app(tmp_path: Path) -> Iterator[ExtenderApp]:
    with ExtenderApp(_settings(tmp_path)) as extender:
        _wait_ready(extender)
        yield extender


def _round_trip(client: Client) -> None:
    status, result = client.post("filter", {"Pod": POD, "NodeNames": NODES})
    assert status == 200 and result["NodeNames"] == NODES
    status, scores = client.post("prioritize", {"Pod": POD, "NodeNames": NODES})
    assert status == 200 and len(scores) == len(NODES)


def test_the_index_is_built_before_ready_and_the_first_request_builds_nothing(
    rows_built: list[Any], app: ExtenderApp
) -> None:
    assert app.server is not None and app.service.ready()
    assert len(rows_built) == len(NODES)  # at start, before ready
    # What the warm-up built is out of the cyclic collector's sight (gc.freeze).
    topology = app.store.get(NODES[0])
    assert gc.is_tracked(topology) and all(o is not topology for o in gc.get_objects())
    rows_built.clear()
    client = Client(app.server.url)
    try:
        _round_trip(client)
        assert rows_built == []
        # The counter does see a change: one node's new NRT costs its row, once.
        changed = nrt(NODES[3], [{"cpu": 2, "memory": 8 * GI}] * 2)
        assert app.store.apply_object(MODIFIED, changed)
        _round_trip(client)
        assert len(rows_built) == 1
    finally:
        client.close()


def test_ready_only_after_the_first_resync_so_that_no_request_waits_behind_it(tmp_path: Path) -> None:
    app = ExtenderApp(_settings(tmp_path))
    release = threading.Event()
    resync = app.service.resync

    def held() -> Any:
        release.wait(10)
        return resync()

    app.service.resync = held  # type: ignore[method-assign]
    with app:
        assert app.server is not None
        client = Client(app.server.url)
        try:
            time.sleep(0.2)
            assert client.get("/readyz") == (503, {"status": "first reserve-cache resync not done yet"})
            release.set()
            _wait_ready(app)
            assert client.get("/readyz") == (200, {"status": "ready"})
        finally:
            client.close()


def test_without_warming_the_first_request_would_build_every_row(rows_built: list[Any]) -> None:
    """The control: a service whose NRTs are marked synced directly builds on first use."""
    from rte.consumer.cache.selection import make_cache
    from rte.consumer.store import NRTStore
    from rte.extender.gates import Gates
    from rte.extender.service import ExtenderService
    from rte.extender.wire import ExtenderArgs

    settings = extender_settings(cache_resync_period="5s", scheduler_profiles=[PROFILE])
    store = NRTStore()
    for name in NODES:
        store.apply_object(MODIFIED, nrt(name, [{"cpu": 4, "memory": 8 * GI}] * 2))
    service = ExtenderService(
        store,
        make_cache(settings.cache, store),
        settings.strategy,
        profiles=settings.cache.config.profiles,
        gates=Gates(pods_tracked=False),  # a file-fed store: no pod source
    )
    service.nrt_synced.set()
    service.filter(ExtenderArgs(POD, None, NODES))
    assert len(rows_built) == len(NODES)
    rows_built.clear()
    service.filter(ExtenderArgs(POD, None, NODES))
    assert rows_built == []


def test_the_free_heap_is_given_back_once_before_ready_not_on_every_resync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the first pass and the warm-up freed would stay resident (issue #13's RSS budget);
    # later passes free little, and trimming every 5 s would cost CPU for nothing.
    import rte.extender.app as app_module

    trims: list[bool] = []  # whether the extender was already ready at each trim
    settings = _settings(tmp_path)
    app = ExtenderApp(replace(settings, cache=replace(settings.cache, resync_period=0.05)))
    monkeypatch.setattr(app_module, "release_free_heap", lambda: trims.append(app.service.ready()) or True)
    passes = 0
    resync = app.service.resync

    def counted() -> Any:
        nonlocal passes
        passes += 1
        return resync()

    app.service.resync = counted  # type: ignore[method-assign]
    with app:
        _wait_ready(app)
        deadline = time.monotonic() + 10
        while passes < 4:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert trims == [False]


def test_through_the_apiserver_the_rows_the_first_resync_changed_are_built_before_ready(
    rows_built: list[Any], fake_apiserver: FakeApiServer, fake_kubeconfig: Path
) -> None:
    """Listed pods matching their NRT's fingerprint make the first resync give each such node a
    new view: those rows too are built before ready (at 50 000 nodes, each with its agent pod,
    the first request built the rows of its 2500 candidates; issue #27)."""
    fake_apiserver.install_crd()
    for name in NODES:
        fake_apiserver.create_object(
            PLURAL, nrt(name, [{"cpu": 4, "memory": 8 * GI}] * 2, pods=[("default", f"app-{name}")])
        )
        fake_apiserver.storage.create("pods", pod(f"app-{name}", {"cpu": 1, "memory": 1 * GI}, node=name))
    settings = extender_settings(
        listen="127.0.0.1:0",
        kubeconfig=str(fake_kubeconfig),
        cache_resync_period="3600s",  # the first pass alone, at start
        scheduler_profiles=[PROFILE],
        lease_namespace="",
    )
    with ExtenderApp(settings) as app:
        _wait_ready(app)
        assert app.server is not None
        rows_built.clear()
        client = Client(app.server.url)
        try:
            _round_trip(client)
            assert rows_built == []
        finally:
            client.close()
