"""The socket reader decodes only pods whose bytes it has not seen, and hands back the same objects
for the others (what lets the pod tally skip them)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rte.agent.compute.reading import PublishingRules
from rte.agent.scanner import KubeletConfigCache, Scanner
from rte.errors import InputError
from rte.host.kubelet_config import KubeletConfig
from rte.model.vocabulary import FingerprintMethod
from rte.podres import convert
from rte.podres.client import PodResourcesClient
from rte.podres.reader import SocketReader
from rte.podres.v1 import api_pb2
from rte.testing import scenarios
from rte.testing.fake_kubelet import FakeKubelet


class _Wire:
    """A client double that answers List with given bytes."""

    endpoint = "test"
    decode = PodResourcesClient.decode

    def __init__(self, *answers: bytes) -> None:
        self.answers = list(answers)

    def list_wire(self) -> bytes:
        return self.answers.pop(0)


def _listing(n: int) -> api_pb2.ListPodResourcesResponse:
    return scenarios.synthetic(numa_ids=(0, 1), cpus=16, pods=n, devices=4).listing


def test_unchanged_pods_come_back_as_the_same_objects_over_the_socket(tmp_path: Path) -> None:
    scenario = scenarios.synthetic(numa_ids=(0, 1), cpus=16, pods=30, devices=4)
    with FakeKubelet(scenario=scenario.write(tmp_path / "s"), rate_limit=None) as kubelet:
        reader = SocketReader(PodResourcesClient(kubelet.endpoint, qps=None))
        try:
            first = reader.list()
            listed = kubelet.pods()
            kubelet.set_pods(listed[:10] + listed[11:])  # one pod gone
            second = reader.list()
        finally:
            reader.close()
    assert len(second.pods) == 29 and second.digest != first.digest
    assert all(a is b for a, b in zip(first.pods[:10] + first.pods[11:], second.pods, strict=True))
    assert second.pods == convert.list_from_proto(_without(scenario.listing, 10), "x")


def _without(listing: api_pb2.ListPodResourcesResponse, index: int) -> api_pb2.ListPodResourcesResponse:
    out = api_pb2.ListPodResourcesResponse()
    out.pod_resources.extend(p for i, p in enumerate(listing.pod_resources) if i != index)
    return out


def test_a_response_in_another_form_is_decoded_whole_with_the_same_result() -> None:
    listing = _listing(5)
    plain = listing.SerializeToString()
    unknown_field = plain + b"\x10\x01"  # field 2, a varint: not in the schema, ignored by decoders
    reader = SocketReader(_Wire(plain, unknown_field))  # type: ignore[arg-type]
    first, second = reader.list(), reader.list()
    assert second.digest != first.digest
    assert second.pods == first.pods == convert.list_from_proto(listing, "x")
    assert all(a is b for a, b in zip(first.pods, second.pods, strict=True))


@pytest.mark.parametrize("wire", [b"\x0a\x02\xff\xff", b"\x0a\x05abc"])
def test_bytes_that_do_not_decode_are_a_one_line_input_error(wire: bytes) -> None:
    with pytest.raises(InputError, match="kubelet List response from test"):
        SocketReader(_Wire(wire)).list()  # type: ignore[arg-type]


class _Counting(_Wire):
    decoded = 0

    def decode(self, method: str, raw: bytes, response_type: type[Any]) -> Any:
        self.decoded += 1
        return PodResourcesClient.decode(self, method, raw, response_type)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(6))
def test_random_list_changes_give_the_full_decoding_and_a_true_change(seed: int) -> None:
    rng = random.Random(seed)
    pool = list(_listing(40).pod_resources)
    listed = pool[:20]
    client = _Counting()
    reader = SocketReader(client)  # type: ignore[arg-type]
    before: tuple[object, ...] = ()
    last = None
    for step in range(80):
        roll = rng.random()
        if roll < 0.3:
            listed.insert(rng.randrange(len(listed) + 1), rng.choice(pool))  # new, or listed twice
        elif roll < 0.6 and listed:
            del listed[rng.randrange(len(listed))]
        elif roll < 0.8 and listed:
            listed.insert(rng.randrange(len(listed)), listed.pop(rng.randrange(len(listed))))  # moved
        elif listed:
            listed[rng.randrange(len(listed))] = rng.choice(pool)
        message = api_pb2.ListPodResourcesResponse(pod_resources=listed)
        client.answers.append(message.SerializeToString())
        decoded = client.decoded
        listing = reader.list()
        assert listing.pods == convert.list_from_proto(message, "x"), f"seed {seed}, step {step}"
        change = listing.change
        if listing is not last:  # the same answer twice is the same Listing, nothing changed
            assert change is not None and change.before is before
            assert Counter(map(id, before)) - Counter(map(id, change.gone)) + Counter(
                map(id, change.new)
            ) == Counter(map(id, listing.pods))
        if roll < 0.6 and roll >= 0.3:  # a pod removed: nothing to decode
            assert client.decoded == decoded
        before, last = listing.pods, listing


class _Config(KubeletConfigCache):
    def __init__(self) -> None:
        super().__init__(None, None)

    def get(self) -> KubeletConfig:
        return KubeletConfig(
            cpu_manager_policy="static",
            memory_manager_policy="Static",
            reserved_system_cpus=frozenset({0, 1}),
        )


@pytest.mark.parametrize("seed", range(4))
def test_scans_with_the_readers_word_on_what_changed_equal_full_passes(seed: int) -> None:
    rng = random.Random(seed)
    scenario = scenarios.synthetic(numa_ids=(0, 1, 2, 3), cpus=64, pods=60, devices=8, seed=seed)
    pool = list(scenario.listing.pod_resources)
    allocatable = scenario.allocatable.SerializeToString()

    def scanner(tally: bool) -> tuple[Scanner, _Wire]:
        client = _Wire()
        client.allocatable_message = lambda: api_pb2.AllocatableResourcesResponse.FromString(allocatable)  # type: ignore[attr-defined]
        reader = SocketReader(client)  # type: ignore[arg-type]
        rules = PublishingRules(FingerprintMethod.WITH_EXCLUSIVE_RESOURCES)
        machine = scenarios.machine_for(scenario)
        return Scanner(
            node_name="n",
            reader=reader,
            machine_loader=lambda: machine,
            kubelet_config=_Config(),
            rules=rules,
            pod_tally=tally,
        ), client

    (fast, fast_client), (full, full_client) = scanner(True), scanner(False)
    listed = pool[:30]
    inserted = extra = 0
    for step in range(40):
        # A pod listed twice (the same bytes) may be one decoded object listed twice, or two;
        # which of them a move or removal leaves may be one the tally has not kept facts for,
        # if it holds nothing: those are made again (podtally's module docstring).
        extra += len(listed) - len({p.SerializeToString() for p in listed})
        wire = api_pb2.ListPodResourcesResponse(pod_resources=listed).SerializeToString()
        fast_client.answers.append(wire)
        full_client.answers.append(wire)
        a, b = fast.scan(fresh_list=True), full.scan(fresh_list=True)
        assert (a.topology, a.accounting) == (b.topology, b.accounting), f"seed {seed}, step {step}"
        roll = rng.random()
        if roll < 0.4:
            listed.insert(rng.randrange(len(listed) + 1), rng.choice(pool))
            inserted += 1
        elif roll < 0.8 and listed:
            del listed[rng.randrange(len(listed))]
        elif listed:
            listed.insert(rng.randrange(len(listed)), listed.pop(rng.randrange(len(listed))))
    # Only inserted pods were accounted: removed and moved ones cost nothing, but for the
    # second listing of a pod listed twice.
    assert fast.tally is not None and fast.tally.facts_computed <= 30 + inserted + extra


def test_a_list_above_the_pod_limit_is_refused_before_any_pod_is_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue #26 item 4: 400 000 pods fit under the 16 MiB gRPC cap and took minutes and hundreds
    of MiB to decode. Past the limit (4 x maxPods) the answer is refused, counted from the
    records' lengths alone: no pod is cut out or decoded."""
    wire = _listing(50).SerializeToString()

    def no_decoding(*args: Any) -> Any:
        raise AssertionError("a pod was decoded")

    monkeypatch.setattr(convert, "pod_from_proto", no_decoding)
    reader = SocketReader(_Wire(wire), pod_limit=49)  # type: ignore[arg-type]
    with pytest.raises(InputError) as refused:
        reader.list()
    assert str(refused.value) == (
        "kubelet List response from test: lists more than 49 pods, above the limit of 49"
        " (4 x the kubelet's maxPods, or the max_listed_pods setting); refused before decoding it"
    )
    monkeypatch.undo()
    assert len(SocketReader(_Wire(wire), pod_limit=50).list().pods) == 50  # type: ignore[arg-type]


def test_counting_records_stops_just_past_the_limit() -> None:
    from rte.podres import wire

    data = _listing(30).SerializeToString()
    assert wire.count_records(data, 100) == 30
    assert wire.count_records(data, 10) == 11
    assert wire.count_records(b"", 10) == 0


def test_the_pod_limit_follows_the_kubelet_config_max_pods() -> None:
    from rte.podres.reader import pod_limit

    assert pod_limit(110) == 440
    assert pod_limit(None) == 4000  # no kubelet config: a limit no real node reaches
    assert pod_limit(110, override=7) == 7
