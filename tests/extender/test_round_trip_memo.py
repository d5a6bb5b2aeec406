"""The extender's per-request shortcuts answer exactly what the plain path answers.

Three shortcuts keep a round trip's cost off the per-node Python work (issue #13): a candidate
list sent again decodes to the very same tuple (the kernel's mirror then maps it to rows by
identity); a pod sent again (filter then prioritize) is prepared once. Each is checked against
the path without it (prioritize's prepared answers: ``test_priorities.py``).
"""

from __future__ import annotations

from email.message import Message
from typing import Any

import orjson

from rte.consumer.cache.selection import make_cache
from rte.consumer.store import ADDED, NRTStore
from rte.extender.server import StateSnapshots, extender_handler
from rte.extender.service import ExtenderService, Gates
from rte.extender.settings import extender_settings
from rte.extender.wire import decode_args
from rte.runtime.httpwire import HttpRequest
from tests.helpers.extender import GI, PROFILE, nrt, pod

NAMES = [f"w-{i}" for i in range(12)]


def test_a_candidate_list_sent_again_is_the_same_tuple_and_another_list_is_not() -> None:
    first = decode_args(orjson.dumps({"Pod": {}, "NodeNames": NAMES}))
    again = decode_args(orjson.dumps({"Pod": {}, "NodeNames": NAMES}))
    other = decode_args(orjson.dumps({"Pod": {}, "NodeNames": NAMES[::-1]}))
    assert first.candidate_names() is again.candidate_names()
    assert list(first.candidate_names()) == NAMES
    assert list(other.candidate_names()) == NAMES[::-1]


def _service() -> ExtenderService:
    settings = extender_settings(cache_resync_period="5s", scheduler_profiles=[PROFILE])
    store = NRTStore()
    for i, name in enumerate(NAMES):
        store.apply_object(ADDED, nrt(name, [{"cpu": 2 + i % 5, "memory": (1 + i % 3) * GI}] * 2))
    service = ExtenderService(
        store,
        make_cache(settings.cache, store),
        settings.strategy,
        profiles=settings.cache.config.profiles,
        gates=Gates(pods_tracked=False),  # a file-fed store: no pod source
    )
    service.nrt_listed()
    return service


def _post(service: ExtenderService, verb: str, body: dict[str, Any]) -> Any:
    handle = extender_handler(service, StateSnapshots(service, 1.0))
    response = handle(HttpRequest("POST", f"/{verb}", "", Message(), orjson.dumps(body), "test"))
    assert response.status == 200, response.body
    return orjson.loads(response.body)


def test_a_pod_changed_under_the_same_uid_is_prepared_anew() -> None:
    """The memo is keyed by the pod's bytes, not its uid: a different pod is a different key."""
    service = _service()
    small, big = pod("p", {"cpu": 1, "memory": "1Gi"}), pod("p", {"cpu": 5, "memory": "1Gi"})
    assert small["metadata"]["uid"] == big["metadata"]["uid"]
    answers = {}
    for name, manifest in (("small", small), ("big", big), ("small again", small)):
        answers[name] = _post(service, "filter", {"Pod": manifest, "NodeNames": NAMES})
    assert answers["small"] == answers["small again"]
    assert answers["small"]["NodeNames"] == NAMES
    assert answers["big"]["NodeNames"] == [n for i, n in enumerate(NAMES) if 2 + i % 5 >= 5]


def test_the_http_answers_equal_the_service_answers_from_dictionaries() -> None:
    service = _service()
    manifest = pod("p", {"cpu": 2, "memory": "1Gi"})
    for _ in range(2):  # the second time through every memo
        filtered = _post(service, "filter", {"Pod": manifest, "NodeNames": NAMES})
        args = decode_args(orjson.dumps({"Pod": manifest, "NodeNames": list(NAMES)}))
        assert filtered == service.filter(args)
        body = {"Pod": manifest, "NodeNames": filtered["NodeNames"]}
        prioritized = _post(service, "prioritize", body)
        assert prioritized == service.prioritize(decode_args(orjson.dumps(body)))
        assert {p["Host"] for p in prioritized} == set(filtered["NodeNames"])
