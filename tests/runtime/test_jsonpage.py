"""A list page decoded one item at a time gives what decoding it whole gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rte.runtime.jsonpage import list_page_one_by_one

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


def _whole(data: bytes) -> tuple[dict[str, Any], list[Any]]:
    body = json.loads(data)
    return body.get("metadata") or {}, [i for i in body.get("items") or () if isinstance(i, dict)]


@given(
    st.lists(_VALUES, max_size=6),
    st.dictionaries(st.sampled_from(["resourceVersion", "continue", "x"]), st.text(max_size=6)),
    st.permutations(["kind", "apiVersion", "metadata", "items"]),
    st.sampled_from([None, 1, 2]),
)
def test_the_items_and_metadata_are_those_of_the_whole_page(
    items: list[Any], metadata: dict[str, str], order: list[str], indent: int | None
) -> None:
    values = {"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": items}
    data = json.dumps({k: values[k] for k in order}, indent=indent).encode()
    got_metadata, got_items = list_page_one_by_one(data)
    listed = list(got_items)
    assert (dict(got_metadata), listed) == _whole(data)


def test_items_come_out_before_the_rest_of_the_page_is_read() -> None:
    data = b'{"metadata": {"resourceVersion": "7"}, "items": [{"a": 1}, {"b": 2}], "kind": "PodList"}'
    metadata, items = list_page_one_by_one(data)
    assert next(items) == {"a": 1} and metadata == {"resourceVersion": "7"}
    assert list(items) == [{"b": 2}]


@pytest.mark.parametrize(
    "data",
    [b"", b"[]", b'{"items": [{"a": 1} {"b": 2}]}', b'{"items": [1,]}', b'{"items": []} x', b'{"a" 1}'],
)
def test_malformed_json_or_a_page_that_is_no_object_is_refused(data: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        list(list_page_one_by_one(data)[1])


@pytest.mark.parametrize("data", [b"{}", b'{"items": null}', b'{"items": []}', b' { "items" : [ ] } '])
def test_an_empty_page_has_no_items(data: bytes) -> None:
    assert list(list_page_one_by_one(data)[1]) == []
