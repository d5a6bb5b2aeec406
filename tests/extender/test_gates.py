"""The service's gates, given at construction (:class:`rte.extender.service.Gates`): readiness and
serving follow exactly what the front end said it runs."""

from __future__ import annotations

import threading
from typing import Any

from rte.consumer.cache.selection import make_cache
from rte.consumer.store import NRTStore
from rte.extender.gates import Gates, LeaderGate
from rte.extender.service import ExtenderService
from rte.extender.settings import extender_settings


class _Gate:
    """A leader election standing still: leads or not, taken over or not."""

    def __init__(self, leader: bool, serving: bool) -> None:
        self.leader, self.taken_over = leader, serving

    def is_leader(self) -> bool:
        return self.leader

    def serving(self) -> bool:
        return self.taken_over

    def reason(self) -> str:
        return "" if self.taken_over else "taking over as leader: listing pods"

    def state(self) -> dict[str, Any]:
        return {"serving": self.taken_over}


def _service(gates: Gates) -> ExtenderService:
    settings = extender_settings(cache_resync_period="5s")
    store = NRTStore()
    return ExtenderService(
        store, make_cache(settings.cache, store), settings.strategy, profiles=["p"], gates=gates
    )


def test_a_service_without_gates_waits_for_both_lists_and_always_leads() -> None:
    service = _service(Gates())
    service.nrt_synced.set()
    assert not service.ready() and service.not_ready_reason().startswith("pod list not synced yet")
    service.pods_synced.set()
    assert service.ready() and service.is_leader() and service.serving()
    assert service.state()["watches"] is None and service.state()["leadership"] is None


def test_a_file_fed_service_needs_the_nrts_only() -> None:
    service = _service(Gates(pods_tracked=False))
    service.nrt_synced.set()
    assert service.ready()


def test_the_first_resync_holds_readiness_back() -> None:
    first = threading.Event()
    service = _service(Gates(pods_tracked=False, first_resync=first))
    service.nrt_synced.set()
    assert not service.ready()
    assert service.not_ready_reason() == "first reserve-cache resync not done yet"
    first.set()
    assert service.ready()


def test_the_leader_gate_decides_who_serves_and_says_why_not() -> None:
    gate: LeaderGate = _Gate(leader=True, serving=False)
    service = _service(Gates(pods_tracked=False, leadership=gate, watch_status=lambda: {"nrt": {}}))
    service.nrt_synced.set()
    assert service.ready() and service.is_leader() and not service.serving()
    assert service.not_serving_reason() == "taking over as leader: listing pods"
    assert service.state()["leadership"] == {"serving": False}
    assert service.state()["watches"] == {"nrt": {}}
    assert isinstance(gate, _Gate)
    gate.taken_over = True
    assert service.serving() and service.not_serving_reason() == ""
