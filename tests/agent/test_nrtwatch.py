"""The watch on the agent's own NRT (issue #26 item 7), through the real kubernetes client
against the apiserver double: a deletion or an edit of the fields the agent owns asks for a
repair at once; the agent's own writes and other actors' own fields do not."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rte.agent.publish.publisher import Publisher
from rte.agent.watch.nrtwatch import OwnNrtWatch
from rte.model.nrt import GROUP, PLURAL, VERSION
from rte.testing.apiserver import FakeApiServer
from tests.helpers.agent_api import NODE, topology
from tests.helpers.waiting import wait_for


class Repairs:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, what: str) -> None:
        with self._lock:
            self.seen.append(what)

    def count(self) -> int:
        with self._lock:
            return len(self.seen)


@pytest.fixture
def publisher(api_client: Any) -> Publisher:
    return Publisher(api_client, NODE, owner_reference=False, sleep=lambda s: None)


@pytest.fixture
def repairs() -> Repairs:
    return Repairs()


@pytest.fixture
def watch(api_client: Any, publisher: Publisher, repairs: Repairs) -> Iterator[OwnNrtWatch]:
    w = OwnNrtWatch(
        api_client, NODE, publisher, repairs, backoff_base=0.01, backoff_cap=0.05, repair_interval=0.0
    )
    yield w
    w.stop()


def edit(api_client: Any, patch: dict[str, Any], name: str = NODE) -> None:
    """A merge patch by someone else (another field manager)."""
    from kubernetes import client

    from rte.runtime.restclient import generated_api_client

    client.CustomObjectsApi(generated_api_client(api_client)).patch_cluster_custom_object(
        GROUP,
        VERSION,
        PLURAL,
        name,
        patch,
        field_manager="someone-else",
        _content_type="application/merge-patch+json",
    )


def test_own_writes_are_not_repairs_but_a_foreign_edit_and_a_deletion_are(
    fake_apiserver: FakeApiServer, api_client: Any, publisher: Publisher, watch: OwnNrtWatch, repairs: Repairs
) -> None:
    publisher.publish(topology(cpu_available=30))
    watch.start()
    wait_for(watch.synced, 5, "the NRT watch to list")
    assert fake_apiserver.wait_for_watches(1)
    publisher.publish(topology(cpu_available=20, pods=2))  # our own patch: its event is ours
    edit(api_client, {"metadata": {"labels": {"team": "x"}}})  # a field we do not own
    wait_for(lambda: watch.events >= 2, 5, "the watch to see both changes")
    assert repairs.count() == 0

    edit(api_client, {"zones": []})  # someone empties our zones
    wait_for(lambda: repairs.count() == 1, 5, "a repair after the foreign edit")
    assert repairs.seen == ["edited"]
    publisher.forget()
    publisher.publish(topology(cpu_available=20, pods=2))  # the repair the loop would make

    fake_apiserver.delete_object(PLURAL, NODE)
    wait_for(lambda: repairs.count() == 2, 5, "a repair after the deletion")
    assert repairs.seen == ["edited", "deleted"]
    list_queries = [r.query for r in fake_apiserver.requests if r.resource == PLURAL and r.method == "GET"]
    assert any(q.get("fieldSelector") == f"metadata.name={NODE}" for q in list_queries)


def test_another_nodes_nrt_is_none_of_its_business(
    fake_apiserver: FakeApiServer, api_client: Any, publisher: Publisher, watch: OwnNrtWatch, repairs: Repairs
) -> None:
    publisher.publish(topology())
    Publisher(api_client, "worker-2", owner_reference=False).publish(topology("worker-2"))
    watch.start()
    wait_for(watch.synced, 5, "the NRT watch to list")
    assert fake_apiserver.wait_for_watches(1)
    edit(api_client, {"zones": []}, name="worker-2")
    fake_apiserver.delete_object(PLURAL, "worker-2")
    edit(api_client, {"zones": []})  # ours, after theirs: the one repair seen must be this one
    wait_for(lambda: repairs.count() == 1, 5, "the repair of our own NRT")
    assert repairs.seen == ["edited"]


def test_nothing_is_repaired_before_the_agent_published(api_client: Any, publisher: Publisher) -> None:
    """An empty list or a deletion seen before our first publish is not a deletion of ours."""
    repairs = Repairs()
    w = OwnNrtWatch(api_client, NODE, publisher, repairs, repair_interval=0.0)
    stored = {"metadata": {"name": NODE}, "zones": []}
    w._on_list([])
    w._on_event("DELETED", stored)
    w._on_event("MODIFIED", stored)
    assert repairs.count() == 0
    publisher.publish(topology())
    w._on_list([])
    w._on_event("DELETED", stored)
    assert repairs.seen == ["deleted", "deleted"]


def test_repairs_are_rate_limited_and_coalesced(api_client: Any, publisher: Publisher) -> None:
    """A controller fighting over the object: at most one repair per interval, the held ones
    coalesced into one when the interval ends (a deletion outranks an edit)."""
    now = [100.0]
    repairs = Repairs()
    w = OwnNrtWatch(api_client, NODE, publisher, repairs, repair_interval=0.2, clock=lambda: now[0])
    publisher.publish(topology())
    w._repair("edited")
    w._repair("edited")
    w._repair("deleted")
    assert repairs.seen == ["edited"]
    wait_for(lambda: repairs.count() == 2, 5, "the held repair")
    assert repairs.seen == ["edited", "deleted"]
    assert w.repairs == 3
