"""Reading kubelet checkpoint files: every fixture shape, case-insensitive keys, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from rte.errors import InputError
from rte.host.kubelet_state import (
    CheckpointMemoryBlock,
    MemoryTable,
    load_cpu_manager_state,
    load_memory_manager_state,
    parse_cpu_manager_state,
    parse_memory_manager_state,
    state_files,
)
from rte.model.cpuset import parse_cpuset
from tests.helpers.paths import KUBELET_FIXTURES

STATE = KUBELET_FIXTURES / "state"
APP_POD = "6b0c9a57-2f57-4c1e-9d0a-6f1e2a7d3c11"
WORKER_POD = "0d3f6c2a-8b1e-4f4e-a0c7-1a9b5e7d2f33"


# --- cpu_manager_state ----------------------------------------------------------------------


def test_synthetic_static_cpu_state_splits_104_cpus_into_shared_pool_and_exclusive() -> None:
    state = load_cpu_manager_state(STATE / "cpu_manager_state.SYNTHETIC.dell-r640-scenario.json")
    assert state.policy == "static"
    assert state.default_cpuset == parse_cpuset("0-1,6,8,10-53,58,60,62-103")
    assert state.containers == {
        APP_POD: {"app": frozenset({2, 4, 54, 56})},
        WORKER_POD: {"worker": frozenset({3, 5, 7, 9, 55, 57, 59, 61})},
    }
    assert state.pods == {} and state.legacy_containers == {}
    assert state.exclusive_cpus == {2, 3, 4, 5, 7, 9, 54, 55, 56, 57, 59, 61}
    assert not state.exclusive_cpus & state.default_cpuset
    assert state.exclusive_cpus | state.default_cpuset == set(range(104))


def test_uppercase_default_cpuset_key_of_kubelet_tests_is_read() -> None:
    state = load_cpu_manager_state(STATE / "cpu_manager_state.v2.k8s-test.none-default-only.json")
    assert state.policy == "none"
    assert state.default_cpuset == {4, 5, 6}
    assert state.containers == {} and state.exclusive_cpus == frozenset()


def test_v2_entries_are_read_per_pod_and_container() -> None:
    state = load_cpu_manager_state(STATE / "cpu_manager_state.v2.k8s-test.with-entries.json")
    assert state.default_cpuset == {1, 2, 3}
    assert state.containers == {
        "pod": {"container1": frozenset({4, 5, 6}), "container2": frozenset({1, 2, 3})}
    }
    assert state.exclusive_cpus == {1, 2, 3, 4, 5, 6}


def test_data_wrapped_cpu_state_is_unwrapped_and_pod_entries_count_as_exclusive() -> None:
    state = load_cpu_manager_state(STATE / "cpu_manager_state.v4-data-wrapped.k8s-1.37dev-test.json")
    assert state.policy == "static"
    assert state.default_cpuset == {1, 2, 3}
    assert state.containers == {
        "pod": {"container1": frozenset({4, 5, 6}), "container2": frozenset({7, 8, 9})}
    }
    assert state.pods == {"pod": frozenset(range(4, 11))}
    assert state.exclusive_cpus == set(range(4, 11))


def test_legacy_v1_entries_keyed_by_container_id_are_read() -> None:
    state = parse_cpu_manager_state(
        {"policyName": "static", "defaultCpuSet": "0-1", "entries": {"cri-o://abc": "2-3"}, "checksum": 1}
    )
    assert state.legacy_containers == {"cri-o://abc": frozenset({2, 3})}
    assert state.containers == {}
    assert state.exclusive_cpus == {2, 3}


def test_field_names_and_policy_are_matched_case_insensitively() -> None:
    state = parse_cpu_manager_state(
        {"PolicyName": "Static", "DEFAULTCPUSET": "0", "Entries": {"p": {"c": "1"}}, "PODENTRIES": {}}
    )
    assert state.policy == "static"
    assert state.default_cpuset == {0}
    assert state.exclusive_cpus == {1}


def test_nulls_read_as_empty_like_go_zero_values() -> None:
    state = parse_cpu_manager_state({"policyName": "none", "defaultCpuSet": None, "entries": None})
    assert state.default_cpuset == frozenset() and state.containers == {}


# --- memory_manager_state -------------------------------------------------------------------


def test_synthetic_memory_state_has_consistent_tables_per_numa_node() -> None:
    state = load_memory_manager_state(STATE / "memory_manager_state.SYNTHETIC.dell-r640-scenario.json")
    assert state.policy == "static"  # written "Static"
    assert list(state.machine_state) == [0, 1]
    node0 = state.machine_state[0]
    assert node0.number_of_assignments == 1
    assert node0.cells == (0,)
    assert node0.memory_map["memory"] == MemoryTable(
        total=48938262528,
        system_reserved=1153433600,
        allocatable=47784828928,
        reserved=2147483648,
        free=45637345280,
    )
    assert node0.memory_map["hugepages-1Gi"] == MemoryTable(0, 0, 0, 0, 0)
    assert state.machine_state[1].memory_map["memory"].system_reserved == 0
    for node in state.machine_state.values():
        for table in node.memory_map.values():
            assert table.allocatable == table.total - table.system_reserved
            assert table.free == table.allocatable - table.reserved
    assert state.containers == {
        APP_POD: {
            "app": (CheckpointMemoryBlock(numa_affinity=(0,), memory_type="memory", size=2 * 1024**3),)
        },
        WORKER_POD: {
            "worker": (CheckpointMemoryBlock(numa_affinity=(1,), memory_type="memory", size=4 * 1024**3),)
        },
    }
    assert state.pods == {}


def test_memory_state_of_kubelet_tests_is_read() -> None:
    state = load_memory_manager_state(STATE / "memory_manager_state.v1.k8s-test.json")
    assert state.policy == "static"
    assert state.machine_state[0].memory_map["memory"] == MemoryTable(2048, 512, 1536, 512, 1024)
    assert state.machine_state[0].cells == ()
    assert state.containers == {"pod": {"container1": (CheckpointMemoryBlock((0,), "memory", 512),)}}


def test_memory_pod_entries_are_read_as_pod_level_blocks() -> None:
    state = load_memory_manager_state(STATE / "memory_manager_state.v2-podEntries.k8s-1.36-test.json")
    assert state.pods == {"pod": (CheckpointMemoryBlock((0,), "memory", 512),)}
    assert state.containers == {"pod": {"container1": (CheckpointMemoryBlock((0,), "memory", 512),)}}


def test_data_string_wins_over_a_stale_top_level_memory_state() -> None:
    state = load_memory_manager_state(STATE / "memory_manager_state.v3-data-wrapped.k8s-1.37dev-test.json")
    assert state.policy == "static"  # the top level says "other"
    assert state.machine_state[0].number_of_assignments == 0  # the top level says 5
    assert state.machine_state[0].memory_map["memory"].total == 2048
    assert state.containers == {"pod": {"container1": (CheckpointMemoryBlock((0,), "memory", 512),)}}


def test_memory_blocks_may_span_several_numa_nodes() -> None:
    state = parse_memory_manager_state(
        {
            "policyName": "Static",
            "machineState": {"0": {"cells": [0, 1]}, "1": {"cells": [0, 1]}},
            "entries": {"p": {"c": [{"numaAffinity": [0, 1], "type": "hugepages-1Gi", "size": 2 * 1024**3}]}},
        }
    )
    assert state.machine_state[1].cells == (0, 1)
    assert state.containers["p"]["c"] == (CheckpointMemoryBlock((0, 1), "hugepages-1Gi", 2 * 1024**3),)


# --- files worth watching -------------------------------------------------------------------


def test_state_files_are_under_the_injected_kubelet_root(tmp_path: Path) -> None:
    assert state_files(tmp_path) == (
        tmp_path / "cpu_manager_state",
        tmp_path / "memory_manager_state",
        tmp_path / "dra_manager_state",
        tmp_path / "device-plugins" / "kubelet_internal_checkpoint",
    )


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "detail"),
    [
        ("cpu_manager_state", '{"policyName": "static",', "not valid JSON"),
        ("memory_manager_state", "", "not valid JSON"),
        ("cpu_manager_state", "[1, 2]", "expected an object"),
    ],
)
def test_a_malformed_state_file_is_a_one_line_error_naming_it(
    tmp_path: Path, name: str, text: str, detail: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    loader = load_cpu_manager_state if name.startswith("cpu") else load_memory_manager_state
    with pytest.raises(InputError) as info:
        loader(path)
    assert "\n" not in str(info.value)
    assert info.value.source == str(path)
    assert detail in info.value.detail


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ('{"data": "{not json", "checksum": 1}', "data", "not valid JSON"),
        ('{"policyName": "static", "defaultCpuSet": "0-x"}', "defaultCpuSet", "0-x"),
        ('{"entries": {"pod": {"c": "5-2"}}}', "entries.pod.c", "5-2"),
        ('{"entries": {"pod": ["1"]}}', "entries.pod", "['1']"),
        ('{"data": "{\\"entries\\": {\\"pod\\": {\\"c\\": 7}}}"}', "data.entries.pod.c", "7"),
        ('{"podEntries": {"pod": {"cpuSet": "a"}}}', "podEntries.pod.cpuSet", "a"),
    ],
)
def test_a_bad_cpu_state_value_names_file_field_and_value(
    tmp_path: Path, text: str, field: str, value: str
) -> None:
    path = tmp_path / "cpu_manager_state"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_cpu_manager_state(path)
    assert "\n" not in str(info.value)
    assert info.value.source == f"{path}: {field}"
    assert value in info.value.detail


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ('{"machineState": {"zero": {}}}', "machineState.zero", "zero"),
        (
            '{"machineState": {"0": {"memoryMap": {"memory": {"total": "1Gi"}}}}}',
            "machineState.0.memoryMap.memory.total",
            "1Gi",
        ),
        ('{"machineState": {"0": {"cells": ["0"]}}}', "machineState.0.cells", "'0'"),
        ('{"entries": {"p": {"c": {"size": 1}}}}', "entries.p.c", "size"),
        ('{"entries": {"p": {"c": [{"size": true}]}}}', "entries.p.c[0].size", "True"),
        (
            '{"podEntries": {"p": {"memoryBlocks": [{"numaAffinity": 0}]}}}',
            "podEntries.p.memoryBlocks[0].numaAffinity",
            "0",
        ),
    ],
)
def test_a_bad_memory_state_value_names_file_field_and_value(
    tmp_path: Path, text: str, field: str, value: str
) -> None:
    path = tmp_path / "memory_manager_state"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_memory_manager_state(path)
    assert "\n" not in str(info.value)
    assert info.value.source == f"{path}: {field}"
    assert value in info.value.detail


def test_a_missing_state_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read") as info:
        load_cpu_manager_state(tmp_path / "cpu_manager_state")
    assert info.value.source == str(tmp_path / "cpu_manager_state")


def test_a_huge_bad_value_is_shortened_in_the_message() -> None:
    with pytest.raises(InputError) as info:
        parse_cpu_manager_state({"entries": {"pod": ["x" * 500]}}, "cpu_manager_state")
    assert len(str(info.value)) < 200
