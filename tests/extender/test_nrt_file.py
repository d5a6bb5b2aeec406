"""``--nrt-file``: JSON read at JSON speed into shared parts, the same store as YAML gives.

The compact reader (rte.consumer.nrtfile) must build exactly what ``from_nrt`` builds, or give the
object to ``from_nrt``: checked on mutated NRT objects, strict and not. Files: the same NRTs as
JSON (a List, one object, a ``.yaml`` name holding JSON) and as YAML (one List, several
documents) load the same topologies, and a bad item is named the same way in both.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from rte.consumer.nrtfile import CompactReader, _raw_items, read_nrt_file
from rte.consumer.store import NRTStore, topologies_from_file
from rte.errors import InputError
from rte.model.nrt import from_nrt
from tests.helpers.extender import GI, nrt
from tests.helpers.fuzz import mutated

ZONES = [{"cpu": 3, "memory": 60 * GI, "hugepages-1Gi": 2 * GI}, {"cpu": 5, "memory": 4 * GI}]


def _nrts(count: int = 4) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        obj = nrt(f"worker-{i}", ZONES if i % 2 else ZONES[:1])
        obj["metadata"]["labels"] = {"zone": "zürich", "i": str(i)}
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": f"w{i}", "uid": "u"}
        ]
        obj["zones"][0]["resources"].append(
            {"name": "vendor.com/nic", "capacity": "4", "allocatable": "4", "available": str(i % 3)}
        )
        out.append(obj)
    out[1]["zones"][0]["resources"][0]["available"] = "1500m"  # a suffix: not base units
    out[2]["zones"][0]["parent"] = "socket-0"
    return out


def _same_or_same_error(compact: Any, reference: Any) -> None:
    if isinstance(reference, InputError):
        assert isinstance(compact, InputError) and str(compact) == str(reference)
    else:
        assert compact == reference


def _outcome(call: Any) -> Any:
    try:
        return call()
    except InputError as e:
        return e


@given(st.sampled_from(_nrts()).flatmap(mutated), st.booleans())
def test_compact_reader_equals_from_nrt(obj: Any, strict: bool) -> None:
    logging.disable(logging.WARNING)  # from_nrt's warnings about negative amounts
    try:
        compact = _outcome(lambda: CompactReader().read(obj, strict=strict))
        reference = _outcome(lambda: from_nrt(obj, strict=strict))
    finally:
        logging.disable(logging.NOTSET)
    _same_or_same_error(compact, reference)


@given(st.sampled_from(_nrts()).flatmap(mutated))
@example({**_nrts()[0], "kind": "Pod"})
@example({**_nrts()[0], "apiVersion": "v1"})
@example({**_nrts()[0], "zones": [{**_nrts()[0]["zones"][0], "parent": ""}]})
def test_the_struct_reader_of_json_items_equals_from_nrt(obj: Any) -> None:
    raw = json.dumps(obj).encode("utf-8", "surrogatepass")
    logging.disable(logging.WARNING)
    try:
        compact = _outcome(lambda: CompactReader().read_raw(raw, strict=True))
        reference = _outcome(lambda: from_nrt(obj, strict=True) if isinstance(obj, dict) else None)
    finally:
        logging.disable(logging.NOTSET)
    if isinstance(compact, InputError) and isinstance(reference, InputError):
        assert compact.detail == reference.detail and compact.source.endswith(reference.source)
    else:
        assert compact == reference


def test_equal_parts_are_one_object() -> None:
    reader = CompactReader()
    a, b = (reader.read(json.loads(json.dumps(o))) for o in (_nrts()[1], _nrts()[3]))
    assert a.zones[1] is b.zones[1]  # same name, costs and resources
    assert a.zones[0].costs is b.zones[0].costs
    assert a.attributes is b.attributes
    assert a.zones[0].resources[0].name is b.zones[0].resources[0].name


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "NodeResourceTopologyList", "items": objects}


def test_json_and_yaml_files_give_the_same_store(tmp_path: Path) -> None:
    objects = _nrts()
    files = [
        _write(tmp_path, "list.json", json.dumps(_as_list(objects))),
        _write(tmp_path, "list-json-content.yaml", json.dumps(_as_list(objects), indent=2)),
        _write(tmp_path, "list.yaml", yaml.safe_dump(_as_list(objects), allow_unicode=True)),
        _write(tmp_path, "docs.yaml", yaml.safe_dump_all(objects)),
    ]
    reference = [from_nrt(o, strict=True) for o in objects]
    snapshots = []
    for path in files:
        assert topologies_from_file(path) == reference, path.name
        store = NRTStore()
        store.replace_all(topologies_from_file(path))
        snapshots.append(store.snapshot())
    assert all(s == snapshots[0] for s in snapshots)
    one = _write(tmp_path, "one.json", json.dumps(objects[2]))
    assert topologies_from_file(one) == [reference[2]]
    # JSON takes the item-by-item path (not the YAML reader's fallback, which gives the same)
    assert [len(r or ()) for r in map(_raw_items, files)] == [4, 4, 0, 0]
    assert _raw_items(one) is not None


def test_yaml_flow_style_that_is_not_json_is_read_as_yaml(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "flow.yaml", "{kind: NodeResourceTopologyList, items: [" + json.dumps(_nrts()[0]) + "]}"
    )
    assert topologies_from_file(path) == [from_nrt(_nrts()[0])]


def test_integers_beyond_64_bits_stay_exact(tmp_path: Path) -> None:
    objects = _nrts()[:2]
    objects[1]["zones"][0]["costs"][0]["value"] = 2**70
    path = _write(tmp_path, "big.json", json.dumps(_as_list(objects)))
    assert read_nrt_file(path)[1].zones[0].costs[0].value == 2**70


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_bad_item_is_named_alike(tmp_path: Path, suffix: str) -> None:
    objects = _nrts()
    objects[2]["zones"][0]["resources"][0]["available"] = "-1"
    text = json.dumps(_as_list(objects)) if suffix == ".json" else yaml.safe_dump(_as_list(objects))
    path = _write(tmp_path, f"bad{suffix}", text)
    with pytest.raises(InputError) as e:
        topologies_from_file(path)
    assert str(e.value).startswith(f"{path}: items[2]: zones[0].resources[0].available: negative quantity")
