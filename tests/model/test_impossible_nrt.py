"""NRTs no agent can have published truthfully are bad input (issue #23, item 7): each is one
line naming the field, from both readers (``from_nrt`` and the extender's ``CompactReader``),
``rte fit`` exits 2 on it, and the extender refuses the node with the reason."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rte.cli import main
from rte.consumer.nrtfile import CompactReader
from rte.errors import InputError
from rte.model.nrt import from_nrt
from tests.helpers.extender import GI, nrt
from tests.helpers.paths import REPO

ZONES = [{"cpu": 4, "memory": 8 * GI}, {"cpu": 8, "memory": 16 * GI}]


def _duplicate_zone() -> dict[str, Any]:
    obj = nrt("dup", ZONES)
    obj["zones"][1]["name"] = "node-0"
    return obj


def _available_above_allocatable() -> dict[str, Any]:
    obj = nrt("over", ZONES)
    cpu = obj["zones"][1]["resources"][0]
    assert cpu["name"] == "cpu"
    cpu["allocatable"] = "6"  # capacity 8, allocatable 6, available 8: free beyond what pods may get
    return obj


CASES = [
    (_duplicate_zone, "zones[1].name: zone 'node-0' is also zones[0]: zone names are unique"),
    (_available_above_allocatable, "zones[1].resources[0].available: cpu available 8 exceeds allocatable 6"),
]


@pytest.mark.parametrize(("make", "message"), CASES)
def test_both_readers_refuse_an_impossible_nrt_naming_the_field(make: Any, message: str) -> None:
    obj = make()
    with pytest.raises(InputError) as slow:
        from_nrt(copy.deepcopy(obj))
    assert str(slow.value) == message
    with pytest.raises(InputError) as fast:
        CompactReader().read(copy.deepcopy(obj))
    assert str(fast.value) == message
    with pytest.raises(InputError) as raw:
        CompactReader().read_raw(json.dumps(obj).encode(), strict=False)
    assert str(raw.value) == message


@pytest.mark.parametrize(("make", "message"), CASES)
def test_rte_fit_exits_2_with_one_line_naming_the_file_and_field(
    tmp_path: Path, make: Any, message: str
) -> None:
    path = tmp_path / "nrt.json"
    path.write_text(json.dumps(make()))
    pod = str(REPO / "examples" / "pod-guaranteed.yaml")
    result = CliRunner().invoke(main, ["fit", "--pod", pod, str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"rte: error: {path}") and lines[0].endswith(message)
