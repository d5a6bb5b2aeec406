"""orjson on the extender's wire must answer exactly what ``json`` would (rte.yamlfile).

orjson reads integers beyond 64 bits as floats and refuses a few inputs ``json`` accepts
(lone surrogates, NaN, a byte order mark); the fast path must notice each and hand the body to
``json``. Checked on arbitrary JSON values and on the extender's Kubernetes shapes (a Pod with
unicode labels, whole Node objects carrying huge integers) through decode, filter and encode.
"""

from __future__ import annotations

import json
from email.message import Message
from typing import Any

import msgspec
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rte.consumer.cache.selection import make_cache
from rte.consumer.store import ADDED, NRTStore
from rte.errors import InputError
from rte.extender.server import StateSnapshots, extender_handler
from rte.extender.service import ExtenderService
from rte.extender.settings import extender_settings
from rte.extender.wire import (
    ExtenderArgs,
    _decode_fast,
    _decode_whole,
    decode_args,
    host_priorities,
    host_priority,
)
from rte.runtime.httpwire import HttpRequest
from rte.yamlfile import _may_hold_big_int, decode_json, encode_json
from tests.helpers.extender import GI, PROFILE, node, nrt, pod
from tests.helpers.fuzz import huge_integers, json_text, json_values, mutated, value_or_input_error

_BASES = [
    {"Pod": {"metadata": {"name": "p"}}, "NodeNames": ["a", "b"]},
    {
        "Pod": {"metadata": {"name": "p"}},
        "Nodes": {
            "items": [
                {"metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi"}}},
                {"metadata": {"name": "b", "labels": {"z": "é"}}, "status": {"images": [{"sizeBytes": 1}]}},
            ]
        },
    },
]
_wire_bodies = st.one_of(json_text(st.sampled_from(_BASES).flatmap(mutated)), json_text(json_values))

BIG = [2**64, 2**64 - 1, 2**63, -(2**63), -(2**63) - 1, 10**30, -(10**30), 10**300]


def _same(a: Any, b: Any) -> bool:
    """Equal with the types too (1 == 1.0 == True in Python, not on the wire)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN (json reads it)


@given(json_values, st.sampled_from([{}, {"indent": 1}, {"separators": (",", ":")}, {"ensure_ascii": False}]))
@example({"a": 2**64}, {})
@example([-(2**63) - 1], {"separators": (",", ":")})
@example(10**30, {})
@example({"é": "日本", "k": "\ud800"}, {})
def test_decode_equals_json(value: Any, style: dict[str, Any]) -> None:
    text = json.dumps(value, **style)
    data = text.encode("utf-8", "surrogatepass")
    assert _same(decode_json(data, "x"), json.loads(data))
    assert _same(decode_json(text, "x"), json.loads(text))


@given(json_values)
@example({"a": [2**64, -(2**63) - 1, "é\ud800"]})
def test_encode_decodes_to_the_same_value(value: Any) -> None:
    assert _same(json.loads(encode_json(value)), value)


@pytest.mark.parametrize("number", BIG)
@pytest.mark.parametrize("layout", ['{"a":%s}', '{"a" : %s}', "[1,%s]", "[ %s ]", "%s", '{"a":\n\t%s}'])
def test_huge_integers_are_exact(number: int, layout: str) -> None:
    text = layout % number
    assert _same(decode_json(text.encode(), "x"), json.loads(text))


@given(huge_integers)
def test_the_scan_flags_every_integer_orjson_would_turn_into_a_float(number: int) -> None:
    import orjson

    body = json.dumps({"a": [number]}, separators=(",", ":")).encode()
    if not _may_hold_big_int(body):
        assert _same(orjson.loads(body), json.loads(body))


@pytest.mark.parametrize("body", [b'"\\ud800"', b"NaN", b"[1.5e400]", b"\xef\xbb\xbf{}"])
def test_what_orjson_refuses_json_decides(body: bytes) -> None:
    assert _same(decode_json(body, "x"), json.loads(body))


@pytest.mark.parametrize("body", [b'{"a":1} x', b"", b'"\xff"', b"{", b"[" * 5000 + b"]" * 5000])
def test_errors_name_the_source_on_one_line(body: bytes) -> None:
    with pytest.raises(InputError) as e:
        decode_json(body, "ExtenderArgs")
    assert e.value.source == "ExtenderArgs" and "\n" not in str(e.value)


def _wire_pod() -> dict[str, Any]:
    manifest = pod("p-ü", {"cpu": 2, "memory": 1 * GI})
    manifest["metadata"]["labels"] = {"app": "日本語", "emoji": "🚀", "esc": "a\u2028b"}
    manifest["metadata"]["generation"] = 2**63 - 1
    return manifest


def _wire_node(name: str, big: int) -> dict[str, Any]:
    obj = node(name, {"cpu": "8", "memory": "64Gi"}, labels={"zone": "zürich"})
    obj["status"]["images"] = [{"names": [f"sha256:{'9' * 40}"], "sizeBytes": big}]
    return obj


@pytest.mark.parametrize("big", BIG)
def test_whole_node_filter_echoes_nodes_exactly(big: int) -> None:
    """Whole-Node mode: the Nodes that pass come back as sent, huge integers and unicode included."""
    settings = extender_settings(scheduler_profiles=[PROFILE])
    store = NRTStore()
    store.apply_object(ADDED, nrt("worker-a", [{"cpu": 3, "memory": 60 * GI}]))
    service = ExtenderService(
        store, make_cache(settings.cache, store), settings.strategy, profiles=settings.cache.config.profiles
    )
    service.nrt_synced.set()
    service.replace_pods([])
    handle = extender_handler(service, StateSnapshots(service, max_age=0))
    args = {"Pod": _wire_pod(), "Nodes": {"items": [_wire_node("worker-a", big), _wire_node("w-b", big)]}}
    body = json.dumps(args).encode()
    response = handle(HttpRequest("POST", "/filter", "", Message(), body, "127.0.0.1"))
    assert response.status == 200
    fast = json.loads(response.body)
    assert fast["Error"] == "" and fast["FailedNodes"] == {}
    assert _same(fast["Nodes"]["items"], json.loads(body)["Nodes"]["items"])
    assert _same(decode_args(body).pod, args["Pod"])


def _echo_json(echo: Any) -> bytes:
    """A Node's JSON as the filter's answer carries it: its bytes as sent (fast decoder), or
    the decoded object encoded again."""
    return bytes(echo) if isinstance(echo, msgspec.Raw) else encode_json(echo)


def _args_view(args: ExtenderArgs) -> Any:
    """Everything the service and the answer read from decoded args, as plain values."""
    nodes = None
    if args.nodes is not None:
        nodes = [(n.name, n.allocatable, json.loads(_echo_json(n.echo))) for n in args.nodes]
    return args.pod, args.node_names, nodes, list(args.candidate_names())


def _fast_equals_whole(body: bytes) -> None:
    fast = _decode_fast(body)
    whole = value_or_input_error(lambda: _decode_whole(body), "ExtenderArgs")
    if fast is not None:
        assert not isinstance(whole, InputError), whole
        assert _same(_args_view(fast), _args_view(whole))


@given(_wire_bodies)
@example(json.dumps({"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "a", "x": "\xff"}}]}}))
@example('{"pod": {}, "nodes": {"items": [{"metadata": {"name": "a"}, "status": []}]}, "NodeNames": null}')
@example('{"Pod": {}, "Nodes": {"items": 0}}')
@example('{"Pod": {}, "Nodes": {"items": [{"metadata": {"name": ""}}]}}')
@example('{"Pod": {}, "Nodes": null, "NodeNames": ["a"], "Pod": {"b": 1}}')
def test_the_fast_decoder_reads_what_the_whole_decoder_reads(body: str) -> None:
    _fast_equals_whole(body.encode("utf-8", "surrogatepass"))


def test_the_fast_decoder_takes_whole_node_requests_and_echoes_them_as_sent() -> None:
    items = [
        _wire_node("worker-a", 2**70),
        {"metadata": {"name": "b"}, "status": {"allocatable": {"x": "1"}}},
    ]
    body = json.dumps({"Pod": _wire_pod(), "Nodes": {"items": items}}, indent=1).encode()
    fast = _decode_fast(body)
    assert fast is not None and fast.nodes is not None
    assert [(n.name, n.allocatable) for n in fast.nodes] == [("worker-a", {"cpu", "memory"}), ("b", {"x"})]
    assert _same([json.loads(_echo_json(n.echo)) for n in fast.nodes], items)
    assert b"1180591620717411303424" in _echo_json(fast.nodes[0].echo)  # 2**70, digit for digit


def test_invalid_utf8_in_a_skipped_field_is_left_to_the_whole_decoder() -> None:
    body = b'{"Pod": {}, "Nodes": {"items": [{"metadata": {"name": "a"}, "spec": "\xff"}]}}'
    assert _decode_fast(body) is None
    with pytest.raises(InputError):
        decode_args(body)


def test_host_priorities_by_table_equal_one_by_one() -> None:
    scores = [(f"n{s}", s) for s in range(-3, 105)]
    assert host_priorities(scores) == [host_priority(n, s) for n, s in scores]
