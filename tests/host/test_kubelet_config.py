"""Reading kubelet configuration: fixture files, defaults, wrappers, drop-ins, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rte.errors import InputError
from rte.host.kubelet_config import DEFAULT_EVICTION_HARD, KubeletConfig, parse_kubelet_config
from rte.host.kubelet_config_files import load_kubelet_config, merge_drop_in
from tests.helpers.paths import KUBELET_FIXTURES

FIXTURES = KUBELET_FIXTURES
MI = 1024 * 1024


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- the fixture files ----------------------------------------------------------------------


def test_nfd_test_data_file_reads_policies_reserved_cpus_and_its_eviction_thresholds() -> None:
    config = load_kubelet_config(FIXTURES / "config" / "nfd-test-data-kubeletconf.yaml")
    assert config.topology_manager_policy == "single-numa-node"
    assert config.topology_manager_scope == "container"  # absent: kubelet default
    assert config.cpu_manager_policy == "static"
    assert config.reserved_system_cpus == {1, 3}
    assert config.memory_manager_policy == "None"
    assert config.reserved_memory == {}
    assert config.kube_reserved == {} and config.system_reserved == {}
    assert config.eviction_hard == {
        "imagefs.available": "0%",
        "nodefs.available": "0%",
        "nodefs.inodesFree": "0%",
    }
    # memory.available was not listed, so setting the others dropped its 100Mi default.
    assert config.hard_eviction_memory(64 * 1024 * MI) == 0


def test_performance_profile_kubelet_config_cr_is_unwrapped_from_spec() -> None:
    config = load_kubelet_config(
        FIXTURES / "config" / "cnto-rendered-performanceprofile-KubeletConfig-cr.yaml"
    )
    assert config.topology_manager_policy == "single-numa-node"
    assert config.topology_manager_scope == "container"
    assert config.cpu_manager_policy == "static"
    assert config.cpu_manager_policy_options == {"full-pcpus-only": "true"}
    assert config.reserved_system_cpus == {0}
    assert config.memory_manager_policy == "Static"
    assert config.reserved_memory == {0: {"memory": 1100 * MI}}
    assert config.kube_reserved == {"memory": 500 * MI}
    assert config.system_reserved == {"memory": 500 * MI}
    assert config.eviction_hard == {
        "imagefs.available": "15%",
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
    }
    assert config.hard_eviction_memory(64 * 1024 * MI) == 100 * MI


def test_numaresources_operator_kubelet_config_cr_gives_pod_scope() -> None:
    config = load_kubelet_config(FIXTURES / "config" / "nrop-openshift-KubeletConfig-cr.yaml")
    assert config.topology_manager_policy == "single-numa-node"
    assert config.topology_manager_scope == "pod"
    assert config.cpu_manager_policy == "static"
    assert config.reserved_system_cpus == {0, 1}
    assert config.memory_manager_policy == "Static"
    assert config.reserved_memory == {0: {"memory": 1124 * MI}}
    assert config.kube_reserved == {"memory": 512 * MI}
    assert config.system_reserved == {"memory": 512 * MI}
    assert config.eviction_hard == {"memory.available": "100Mi"}


def test_synthetic_dell_scenario_config_matches_its_podresources_fixtures() -> None:
    config = load_kubelet_config(FIXTURES / "config" / "dell-r640-sriov-static-kubelet-config.SYNTHETIC.yaml")
    assert config.reserved_system_cpus == {0, 1, 52, 53}
    assert config.cpu_manager_policy == "static"
    assert config.memory_manager_policy == "Static"
    assert config.reserved_memory == {0: {"memory": 1100 * MI}}
    assert config.eviction_hard == {"memory.available": "100Mi"}


@pytest.mark.parametrize(
    "name",
    [
        "cnto-rendered-performanceprofile-KubeletConfig-cr.yaml",
        "nrop-openshift-KubeletConfig-cr.yaml",
        "dell-r640-sriov-static-kubelet-config.SYNTHETIC.yaml",
    ],
)
def test_static_memory_fixtures_reserve_exactly_kube_plus_system_plus_eviction(name: str) -> None:
    # The kubelet refuses a Static memory manager whose reservedMemory total differs from this sum.
    config = load_kubelet_config(FIXTURES / "config" / name)
    reserved = sum(limits["memory"] for limits in config.reserved_memory.values())
    expected = (
        config.kube_reserved["memory"]
        + config.system_reserved["memory"]
        + config.hard_eviction_memory(64 * 1024 * MI)
    )
    assert reserved == expected


@pytest.mark.parametrize("name", ["configz.pre-1.36.shape.json", "configz.1.36plus.shape.json"])
def test_both_configz_body_shapes_give_the_same_config_as_the_file(name: str) -> None:
    from_configz = load_kubelet_config(FIXTURES / "configz" / name)
    from_file = load_kubelet_config(FIXTURES / "config" / "nfd-test-data-kubeletconf.yaml")
    assert from_configz == from_file
    assert from_configz.reserved_system_cpus == {1, 3}


def test_configz_body_fetched_over_http_parses_without_a_file() -> None:
    body = json.loads((FIXTURES / "configz" / "configz.1.36plus.shape.json").read_text())
    config = parse_kubelet_config(body, "https://node-1:10250/configz")
    assert config.topology_manager_policy == "single-numa-node"
    assert config.source == "https://node-1:10250/configz"


# --- defaults -------------------------------------------------------------------------------


def test_an_empty_config_gets_every_kubelet_default() -> None:
    config = parse_kubelet_config(
        {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
    )
    assert config == KubeletConfig()
    assert config.topology_manager_policy == "none"
    assert config.topology_manager_scope == "container"
    assert config.topology_manager_policy_options == {}
    assert config.max_numa_nodes == 8
    assert config.cpu_manager_policy == "none"
    assert config.cpu_manager_policy_options == {}
    assert config.reserved_system_cpus == frozenset()
    assert config.memory_manager_policy == "None"
    assert config.reserved_memory == {}
    assert config.kube_reserved == {} and config.system_reserved == {}
    assert config.feature_gates == {}
    assert config.eviction_hard == DEFAULT_EVICTION_HARD
    assert config.eviction_hard["memory.available"] == "100Mi"


def test_empty_strings_and_nulls_count_as_unset() -> None:
    config = parse_kubelet_config(
        {
            "topologyManagerPolicy": "",
            "topologyManagerScope": None,
            "cpuManagerPolicy": "",
            "evictionHard": None,
        }
    )
    assert config == KubeletConfig()


def test_unknown_fields_are_ignored() -> None:
    config = parse_kubelet_config({"someFutureField": {"x": [1, 2]}, "topologyManagerPolicy": "restricted"})
    assert config.topology_manager_policy == "restricted"


# --- evictionHard ---------------------------------------------------------------------------


def test_setting_one_eviction_threshold_drops_the_other_defaults() -> None:
    config = parse_kubelet_config({"evictionHard": {"memory.available": "200Mi"}})
    assert config.eviction_hard == {"memory.available": "200Mi"}
    assert config.hard_eviction_memory(10**12) == 200 * MI


def test_setting_only_disk_thresholds_leaves_no_memory_eviction() -> None:
    config = parse_kubelet_config({"evictionHard": {"nodefs.available": "5%"}})
    assert config.hard_eviction_memory(10**12) == 0


def test_an_explicitly_empty_eviction_map_disables_all_thresholds() -> None:
    config = parse_kubelet_config({"evictionHard": {}})
    assert config.eviction_hard == {}
    assert config.hard_eviction_memory(10**12) == 0


def test_merge_default_eviction_settings_keeps_the_defaults_under_given_thresholds() -> None:
    config = parse_kubelet_config(
        {"mergeDefaultEvictionSettings": True, "evictionHard": {"nodefs.available": "20%"}}
    )
    assert config.eviction_hard == {**DEFAULT_EVICTION_HARD, "nodefs.available": "20%"}
    assert config.hard_eviction_memory(10**12) == 100 * MI


def test_a_memory_eviction_percentage_is_taken_of_capacity_and_truncated() -> None:
    config = parse_kubelet_config({"evictionHard": {"memory.available": "5%"}})
    assert config.hard_eviction_memory(1000) == 50
    assert config.hard_eviction_memory(1019) == 50  # 50.95 truncated, like the kubelet


def test_zero_and_hundred_percent_memory_thresholds_are_ignored_like_the_kubelet() -> None:
    assert parse_kubelet_config({"evictionHard": {"memory.available": "0%"}}).hard_eviction_memory(1000) == 0
    assert (
        parse_kubelet_config({"evictionHard": {"memory.available": "100%"}}).hard_eviction_memory(1000) == 0
    )


# --- reservations and quantities ------------------------------------------------------------


def test_reserved_cpu_is_kept_in_millicores_and_other_resources_in_base_units() -> None:
    config = parse_kubelet_config(
        {
            "kubeReserved": {"cpu": "500m", "memory": "1G", "ephemeral-storage": "1Gi", "pid": "1000"},
            "systemReserved": {"cpu": "2", "memory": 1048576},
        }
    )
    assert config.kube_reserved == {"cpu": 500, "memory": 10**9, "ephemeral-storage": 1024 * MI, "pid": 1000}
    assert config.system_reserved == {"cpu": 2000, "memory": MI}


def test_reserved_memory_entries_for_one_numa_node_combine_and_hugepages_are_bytes() -> None:
    config = parse_kubelet_config(
        {
            "reservedMemory": [
                {"numaNode": 0, "limits": {"memory": "1Gi"}},
                {"numaNode": 1, "limits": {"memory": "512Mi", "hugepages-1Gi": "2Gi"}},
                {"numaNode": 0, "limits": {"hugepages-2Mi": "4Mi"}},
            ]
        }
    )
    assert config.reserved_memory == {
        0: {"memory": 1024 * MI, "hugepages-2Mi": 4 * MI},
        1: {"memory": 512 * MI, "hugepages-1Gi": 2048 * MI},
    }


def test_unquoted_yaml_scalars_in_string_maps_are_taken_as_their_text(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "config.yaml",
        "cpuManagerPolicyOptions:\n  full-pcpus-only: true\nreservedSystemCPUs: 0\n",
    )
    config = load_kubelet_config(path)
    assert config.cpu_manager_policy_options == {"full-pcpus-only": "true"}
    assert config.reserved_system_cpus == {0}


def test_feature_gates_are_read_as_booleans() -> None:
    config = parse_kubelet_config({"featureGates": {"KubeletPodResourcesGet": True, "Other": "false"}})
    assert config.feature_gates == {"KubeletPodResourcesGet": True, "Other": False}


# --- topology manager options --------------------------------------------------------------


def test_max_allowable_numa_nodes_zero_means_the_default() -> None:
    config = parse_kubelet_config({"topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "0"}})
    assert config.max_numa_nodes == 8


# --- drop-in directory ----------------------------------------------------------------------


def test_drop_ins_merge_in_lexical_order_over_the_main_file(tmp_path: Path) -> None:
    main = _write(
        tmp_path / "config.yaml",
        "kind: KubeletConfiguration\ntopologyManagerPolicy: restricted\nreservedSystemCPUs: 0-1\n"
        "reservedMemory:\n- numaNode: 0\n  limits: {memory: 1Gi}\n- numaNode: 1\n  limits: {memory: 1Gi}\n",
    )
    drop_ins = tmp_path / "kubelet.conf.d"
    drop_ins.mkdir()
    _write(drop_ins / "20-policy.conf", "topologyManagerPolicy: single-numa-node\n")
    _write(drop_ins / "10-policy.conf", "topologyManagerPolicy: best-effort\ntopologyManagerScope: pod\n")
    _write(drop_ins / "30-memory.conf", '{"reservedMemory": [{"numaNode": 1, "limits": {"memory": "2Gi"}}]}')
    _write(drop_ins / "40-ignored.yaml", "topologyManagerPolicy: none\n")
    _write(drop_ins / "50-empty.conf", "")
    config = load_kubelet_config(main, drop_ins)
    assert config.topology_manager_policy == "single-numa-node"
    assert config.topology_manager_scope == "pod"
    assert config.reserved_system_cpus == {0, 1}
    assert config.reserved_memory == {1: {"memory": 2048 * MI}}  # lists are replaced whole
    assert "30-memory.conf" in config.source


def test_a_drop_in_eviction_threshold_overrides_one_default_and_keeps_the_rest(tmp_path: Path) -> None:
    # The kubelet defaults the main file before merging drop-ins.
    main = _write(tmp_path / "config.yaml", "kind: KubeletConfiguration\n")
    drop_ins = tmp_path / "d"
    drop_ins.mkdir()
    _write(drop_ins / "10.conf", "evictionHard:\n  memory.available: 300Mi\n")
    config = load_kubelet_config(main, drop_ins)
    assert config.eviction_hard == {**DEFAULT_EVICTION_HARD, "memory.available": "300Mi"}


def test_merge_patch_merges_maps_replaces_scalars_and_deletes_nulls() -> None:
    base = {"featureGates": {"A": True, "B": True}, "port": 1, "gone": "x"}
    merged = merge_drop_in(base, {"featureGates": {"B": False, "C": True}, "port": 2, "gone": None})
    assert merged == {"featureGates": {"A": True, "B": False, "C": True}, "port": 2}
    assert base["featureGates"] == {"A": True, "B": True}  # inputs are not modified


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("topologyManagerPolicy: Single-NUMA-Node\n", "topologyManagerPolicy", "Single-NUMA-Node"),
        ("topologyManagerScope: Pod\n", "topologyManagerScope", "Pod"),
        ("cpuManagerPolicy: Static\n", "cpuManagerPolicy", "Static"),
        ("memoryManagerPolicy: static\n", "memoryManagerPolicy", "static"),
        ("reservedSystemCPUs: 0-\n", "reservedSystemCPUs", "0-"),
        ("reservedSystemCPUs: 3-1\n", "reservedSystemCPUs", "3-1"),
        ("kubeReserved:\n  memory: lots\n", "kubeReserved.memory", "lots"),
        ("systemReserved:\n  cpu: -1\n", "systemReserved.cpu", "-1"),
        (
            "reservedMemory:\n- numaNode: 0\n  limits: {memory: 1.5Q}\n",
            "reservedMemory[0].limits.memory",
            "1.5Q",
        ),
        ("reservedMemory:\n- numaNode: -1\n  limits: {memory: 1Gi}\n", "reservedMemory[0].numaNode", "-1"),
        (
            "reservedMemory:\n- {numaNode: 0, limits: {memory: 1Gi}}\n"
            "- {numaNode: 0, limits: {memory: 2Gi}}\n",
            "reservedMemory[1].limits.memory",
            "NUMA node 0",
        ),
        ("reservedMemory: {numaNode: 0}\n", "reservedMemory", "numaNode"),
        ("evictionHard:\n  memory.available: 110%\n", "evictionHard.memory.available", "110%"),
        ("evictionHard:\n  memory.available: big\n", "evictionHard.memory.available", "big"),
        ("evictionHard: [memory]\n", "evictionHard", "memory"),
        (
            "topologyManagerPolicyOptions:\n  max-allowable-numa-nodes: many\n",
            "topologyManagerPolicyOptions.max-allowable-numa-nodes",
            "many",
        ),
        (
            "topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: maybe\n",
            "topologyManagerPolicyOptions.prefer-closest-numa-nodes",
            "maybe",
        ),
        ("featureGates:\n  Foo: sometimes\n", "featureGates.Foo", "sometimes"),
        ("kind: Pod\n", "kind", "Pod"),
        ("apiVersion: v1\n", "apiVersion", "v1"),
        (
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\nspec: {}\n",
            "spec.kubeletConfig",
            "missing",
        ),
        (
            "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\n"
            "spec:\n  kubeletConfig:\n    topologyManagerScope: node\n",
            "spec.kubeletConfig.topologyManagerScope",
            "node",
        ),
        ('{"kubeletconfig": {"cpuManagerPolicy": "dynamic"}}', "kubeletconfig.cpuManagerPolicy", "dynamic"),
    ],
)
def test_a_bad_value_is_a_one_line_error_naming_file_field_and_value(
    tmp_path: Path, text: str, field: str, value: str
) -> None:
    path = _write(tmp_path / "kubelet.yaml", text)
    with pytest.raises(InputError) as info:
        load_kubelet_config(path)
    message = str(info.value)
    assert "\n" not in message
    assert info.value.source == f"{path}: {field}"
    assert value in info.value.detail


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("- a\n- b\n", "expected a KubeletConfiguration mapping"),
        ("just a string\n", "expected a KubeletConfiguration mapping"),
        ("", "empty file"),
        ("  \n", "empty file"),
        ("topologyManagerPolicy: [unclosed\n", "invalid YAML at line"),
        ("a: 1\n---\nb: 2\n", "invalid YAML"),
    ],
)
def test_a_document_that_is_not_a_config_mapping_is_a_one_line_error(
    tmp_path: Path, text: str, detail: str
) -> None:
    path = _write(tmp_path / "kubelet.yaml", text)
    with pytest.raises(InputError) as info:
        load_kubelet_config(path)
    assert "\n" not in str(info.value)
    assert info.value.source == str(path)
    assert detail in info.value.detail


def test_a_missing_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read") as info:
        load_kubelet_config(tmp_path / "nope.yaml")
    assert info.value.source == str(tmp_path / "nope.yaml")


def test_a_bad_drop_in_is_named_by_its_own_path(tmp_path: Path) -> None:
    main = _write(tmp_path / "config.yaml", "kind: KubeletConfiguration\n")
    drop_ins = tmp_path / "d"
    drop_ins.mkdir()
    bad = _write(drop_ins / "10.conf", "- not\n- a mapping\n")
    with pytest.raises(InputError) as info:
        load_kubelet_config(main, drop_ins)
    assert info.value.source == str(bad)


def test_a_missing_drop_in_directory_is_an_input_error(tmp_path: Path) -> None:
    main = _write(tmp_path / "config.yaml", "kind: KubeletConfiguration\n")
    with pytest.raises(InputError, match="drop-in directory"):
        load_kubelet_config(main, tmp_path / "absent")


def test_max_pods_defaults_to_110_and_refuses_what_the_kubelet_refuses() -> None:
    """maxPods feeds the agent's List cap (issue #26 item 4); 0 or absent is the kubelet's 110."""
    assert parse_kubelet_config({}).max_pods == 110
    assert parse_kubelet_config({"maxPods": 0}).max_pods == 110
    assert parse_kubelet_config({"maxPods": 250}).max_pods == 250
    with pytest.raises(InputError, match=r"maxPods: must not be negative, got -1"):
        parse_kubelet_config({"maxPods": -1}, "kc.yaml")
    with pytest.raises(InputError, match=r"maxPods: expected an integer, got "):
        parse_kubelet_config({"maxPods": "lots"}, "kc.yaml")
