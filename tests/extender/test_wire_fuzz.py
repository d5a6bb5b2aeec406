"""Fuzzing the extender's wire format: whatever a client POSTs, the answer is 200 or a 400 whose
``Error`` is one line naming what was wrong (``ExtenderArgs...``), never a 500.

The requests go to the extender's request handler in-process (the HTTP server in front of it is
tested in test_http.py), so each example costs a parse and a filter. Budget and profiles:
tests/conftest.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from email.message import Message
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rte.consumer.cache.selection import make_cache
from rte.consumer.store import ADDED, NRTStore
from rte.extender.server import StateSnapshots, extender_handler
from rte.extender.service import ExtenderService
from rte.extender.settings import extender_settings
from rte.extender.wire import decode_args
from rte.runtime.httpwire import HttpRequest, Response
from tests.helpers.extender import GI, PROFILE, node, nrt, pod
from tests.helpers.fuzz import deep_json_text, json_text, json_values, mutated, value_or_input_error

WORKER = nrt("worker-a", [{"cpu": 3, "memory": 60 * GI}, {"cpu": 5, "memory": 4 * GI}])
POD = pod("p", {"cpu": 2, "memory": 1 * GI})
BY_NAME = {"Pod": POD, "NodeNames": ["worker-a", "worker-b"]}
BY_OBJECT = {"Pod": POD, "Nodes": {"items": [node("worker-a", {"cpu": "8", "memory": "64Gi"})]}}


@pytest.fixture(scope="module")
def handle() -> Callable[[HttpRequest], Response]:
    settings = extender_settings(scheduler_profiles=[PROFILE])
    store = NRTStore()
    store.apply_object(ADDED, WORKER)
    service = ExtenderService(
        store,
        make_cache(settings.cache, store),
        settings.strategy,
        profiles=settings.cache.config.profiles,
        informer_mode=settings.cache.config.informer_mode,
    )
    service.nrt_synced.set()
    service.replace_pods([])
    return extender_handler(service, StateSnapshots(service, max_age=0))


def _post(handle: Callable[[HttpRequest], Response], verb: str, body: bytes) -> Response:
    return handle(HttpRequest("POST", f"/{verb}", "", Message(), body, "127.0.0.1"))


bodies = st.one_of(
    json_text(st.sampled_from([BY_NAME, BY_OBJECT]).flatmap(mutated)),
    json_text(json_values),
    deep_json_text,
    st.text(max_size=60),
    st.sampled_from(['{"Pod": {}, "NodeNames": [' + "1" * 5000 + "]}", "\ud800", '{"pod": null}']),
)


@given(body=bodies, verb=st.sampled_from(["filter", "prioritize"]))
@example(body="[" * 1200 + "]" * 1200, verb="filter")
@example(body=json.dumps({"Pod": {"spec": {"containers": [{"name": "\n"}]}}, "NodeNames": []}), verb="filter")
def test_any_request_is_answered_200_or_400_with_one_line_naming_the_args(
    handle: Callable[[HttpRequest], Response], body: str, verb: str
) -> None:
    response = _post(handle, verb, body.encode("utf-8", "surrogatepass"))
    assert response.status in (200, 400), response.body[:300]
    if response.status == 400:
        error: Any = json.loads(response.body)["Error"]
        assert error.startswith("ExtenderArgs") and error.splitlines() == [error], error


@given(body=bodies)
def test_decoding_args_is_a_value_or_an_input_error_naming_them(body: str) -> None:
    encoded = body.encode("utf-8", "surrogatepass")
    value_or_input_error(lambda: decode_args(encoded), "ExtenderArgs")
