"""Fuzzing what rte.host reads: sysfs files and trees, kubelet configs, checkpoint files.

Every reader answers a value or a one-line ``InputError`` naming the file (and the field); the
pure sysfs text parsers a value or a one-line ``ValueError``. Budget and profiles:
tests/conftest.py.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from rte.host.kubelet_config import parse_kubelet_config
from rte.host.kubelet_config_files import load_kubelet_config
from rte.host.kubelet_state import (
    load_cpu_manager_state,
    load_memory_manager_state,
    parse_cpu_manager_state,
    parse_memory_manager_state,
)
from rte.host.pci import parse_hex_id, parse_pci_address
from rte.host.sysfs import (
    parse_distance_row,
    parse_hugepages_dir_name,
    parse_id_set,
    parse_node_meminfo,
    read_machine,
)
from rte.host.sysfsio import parse_at, parse_int, parse_optional_id
from tests.helpers.fuzz import (
    deep_json_text,
    deep_yaml_text,
    json_text,
    json_values,
    mutated,
    value_or_input_error,
    value_or_value_error,
)
from tests.helpers.paths import KUBELET_FIXTURES

# ---- sysfs text -------------------------------------------------------------------------------

SYSFS_PARSERS: dict[str, Callable[[str], Any]] = {
    "cpulist": parse_id_set,
    "distance": parse_distance_row,
    "meminfo": parse_node_meminfo,
    "nr_hugepages": parse_int,
    "numa_node": parse_optional_id,
    "hugepages dir": parse_hugepages_dir_name,
    "pci address": parse_pci_address,
    "vendor": parse_hex_id,
}

sysfs_text = st.one_of(
    st.text(max_size=60),
    st.text(alphabet="0123456789-, \n\x00kBNode:MemTotal", max_size=60),
    st.sampled_from(
        [
            "Node 0 MemTotal: 16769836 kB\n",
            "Node 0 MemTotal: 99999999999999999999999 kB\n",
            "10 21\n",
            "0-3,8\n",
            "-1\n",
            "0x8086\n",
            "0000:3b:02.1",
            "hugepages-2048kB",
            "9" * 5000,
        ]
    ),
)


@pytest.mark.parametrize("name", sorted(SYSFS_PARSERS))
@given(text=sysfs_text)
@example(text="0-4294967295")
@example(text="Node 0 MemTotal: " + "9" * 5000 + " kB")
def test_a_sysfs_file_is_a_value_or_a_one_line_error_naming_it(name: str, text: str) -> None:
    parse = SYSFS_PARSERS[name]
    value_or_value_error(lambda: parse(text))
    value_or_input_error(lambda: parse_at(f"/sys/{name}", text, parse), f"/sys/{name}")


# A small tree with every kind of file read_machine reads: two nodes, four CPUs, one PCI device.
_TREE = {
    "devices/system/node/online": "0-1\n",
    "devices/system/node/possible": "0-1\n",
    "devices/system/node/has_cpu": "0-1\n",
    "devices/system/node/has_memory": "0-1\n",
    "devices/system/node/node0/cpulist": "0-1\n",
    "devices/system/node/node0/meminfo": "Node 0 MemTotal: 16769836 kB\nNode 0 MemFree: 100 kB\n",
    "devices/system/node/node0/distance": "10 21\n",
    "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages": "8\n",
    "devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages": "8\n",
    "devices/system/node/node1/cpulist": "2-3\n",
    "devices/system/node/node1/meminfo": "Node 1 MemTotal: 16769836 kB\n",
    "devices/system/node/node1/distance": "21 10\n",
    "devices/system/cpu/online": "0-3\n",
    "devices/system/cpu/present": "0-3\n",
    **{
        f"devices/system/cpu/cpu{cpu}/topology/{name}": value
        for cpu in range(4)
        for name, value in (
            ("physical_package_id", f"{cpu // 2}\n"),
            ("core_id", f"{cpu % 2}\n"),
            ("die_id", "0\n"),
            ("thread_siblings_list", f"{cpu}\n"),
            ("core_siblings_list", f"{cpu // 2 * 2}-{cpu // 2 * 2 + 1}\n"),
        )
    },
    "devices/pci0000:00/0000:00:02.0/vendor": "0x8086\n",
    "devices/pci0000:00/0000:00:02.0/device": "0x158b\n",
    "devices/pci0000:00/0000:00:02.0/class": "0x020000\n",
    "devices/pci0000:00/0000:00:02.0/numa_node": "1\n",
    "devices/pci0000:00/0000:00:02.0/sriov_totalvfs": "64\n",
}
_LINKS = {
    "bus/pci/devices/0000:00:02.0": "../../../devices/pci0000:00/0000:00:02.0",
    "devices/pci0000:00/0000:00:02.0/driver": "../../../bus/pci/drivers/i40e",
}


@pytest.fixture(scope="module")
def sysfs_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fuzz") / "sys"
    for relative, text in _TREE.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    for relative, target in _LINKS.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).symlink_to(target)
    assert read_machine(root, use_udev=False).node_ids == (0, 1)
    yield root


@given(
    relative=st.sampled_from(sorted(_TREE)),
    content=st.one_of(sysfs_text, st.binary(max_size=40).map(lambda b: b.decode("latin-1"))),
    how=st.sampled_from(["write", "remove", "directory"]),
)
@example(relative="devices/system/node/online", content="0-4294967295", how="write")
@example(relative="devices/system/node/node0/distance", content="", how="directory")
def test_a_sysfs_tree_with_one_bad_file_is_a_machine_or_an_input_error_naming_a_file(
    sysfs_tree: Path, relative: str, content: str, how: str
) -> None:
    path = sysfs_tree / relative
    try:
        path.unlink()
        if how == "write":
            path.write_bytes(content.encode("latin-1", "replace"))
        elif how == "directory":  # unreadable even as root: reading it fails with EISDIR
            path.mkdir()
        value_or_input_error(lambda: read_machine(sysfs_tree, use_udev=False), str(sysfs_tree))
    finally:
        if path.is_dir():
            path.rmdir()
        path.write_text(_TREE[relative])


# ---- kubelet config ---------------------------------------------------------------------------


def _decoded(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


KUBELET_CONFIGS = [_decoded(p) for p in sorted((KUBELET_FIXTURES / "config").iterdir())] + [
    _decoded(p) for p in sorted((KUBELET_FIXTURES / "configz").iterdir())
]

# YAML the decoders choke on in ways of their own: deep nesting, integers too long to print,
# tags, aliases, dates, binary.
hostile_yaml = st.one_of(
    deep_yaml_text,
    st.sampled_from(
        [
            "a: " + "1" * 5000,
            "cpuManagerPolicy: 0x" + "f" * 5000,
            "reservedSystemCPUs: 0-99999999999",
            "kubeReserved: {cpu: 0x" + "f" * 5000 + "}",
            "a: &x [*x]",
            "a: !!python/object:os.system ls",
            "featureGates: {A: 2001-01-01}",
            "evictionHard: {memory.available: !!binary aGVsbG8=}",
            "\x00\x01",
            "kind: KubeletConfiguration\n\tbad: indent",
        ]
    ),
)


@given(st.one_of(st.sampled_from(KUBELET_CONFIGS).flatmap(mutated), json_values))
def test_a_kubelet_config_is_a_value_or_an_input_error_naming_the_field(doc: Any) -> None:
    value_or_input_error(lambda: parse_kubelet_config(doc, "kubelet.yaml"), "kubelet.yaml")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("files")


def _yaml(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc)
    except (RecursionError, yaml.YAMLError):
        return "{}"


kubelet_texts = st.one_of(
    st.sampled_from(KUBELET_CONFIGS).flatmap(mutated).map(_yaml),
    json_text(st.sampled_from(KUBELET_CONFIGS).flatmap(mutated)),
    hostile_yaml,
    st.text(max_size=80),
)


@given(main=kubelet_texts, drop_in=st.one_of(st.none(), kubelet_texts))
@example(main="a: " + "[" * 1200 + "]" * 1200, drop_in=None)
@example(main="kubeReserved: {cpu: 0x" + "f" * 5000 + "}", drop_in=None)
@example(main="a: " + "1" * 5000, drop_in=None)
@example(main="{}", drop_in="a: " + "1" * 5000)
def test_a_kubelet_config_file_and_drop_in_are_a_value_or_an_input_error_naming_a_file(
    scratch: Path, main: str, drop_in: str | None
) -> None:
    path = scratch / "config.yaml"
    path.write_text(main, encoding="utf-8", errors="surrogatepass")
    config_dir = scratch / "config.d"
    shutil.rmtree(config_dir, ignore_errors=True)
    if drop_in is not None:
        config_dir.mkdir()
        (config_dir / "10-fuzz.conf").write_text(drop_in, encoding="utf-8", errors="surrogatepass")
    given_dir = config_dir if drop_in is not None else None
    value_or_input_error(lambda: load_kubelet_config(path, given_dir), str(scratch))


# ---- checkpoint files -------------------------------------------------------------------------


def _state_docs(prefix: str) -> list[Any]:
    return [json.loads(p.read_text()) for p in sorted((KUBELET_FIXTURES / "state").glob(f"{prefix}*"))]


CPU_STATES = _state_docs("cpu_manager_state")
MEMORY_STATES = _state_docs("memory_manager_state")


@given(st.one_of(st.sampled_from(CPU_STATES).flatmap(mutated), json_values))
@example({"policyName": "static", "defaultCpuSet": "0-4294967295"})
@example({"data": "[" * 3000 + "]" * 3000})
def test_a_cpu_manager_checkpoint_is_a_value_or_an_input_error_naming_the_field(doc: Any) -> None:
    value_or_input_error(lambda: parse_cpu_manager_state(doc, "cpu_manager_state"), "cpu_manager_state")


@given(st.one_of(st.sampled_from(MEMORY_STATES).flatmap(mutated), json_values))
def test_a_memory_manager_checkpoint_is_a_value_or_an_input_error_naming_the_field(doc: Any) -> None:
    value_or_input_error(
        lambda: parse_memory_manager_state(doc, "memory_manager_state"), "memory_manager_state"
    )


checkpoint_texts = st.one_of(
    json_text(st.sampled_from(CPU_STATES + MEMORY_STATES).flatmap(mutated)),
    deep_json_text,
    st.text(max_size=80),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    st.sampled_from(['{"policyName": ' + "1" * 5000 + "}", '{"data": "' + "[" * 3000 + '"}']),
)


@given(text=checkpoint_texts, load=st.sampled_from([load_cpu_manager_state, load_memory_manager_state]))
@example(text="[" * 3000 + "]" * 3000, load=load_cpu_manager_state)
def test_a_checkpoint_file_is_a_value_or_an_input_error_naming_it(
    scratch: Path, text: str, load: Callable[[Path], Any]
) -> None:
    path = scratch / "state"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    value_or_input_error(lambda: load(path), str(path))
