"""PCI devices: the fixtures' NUMA counts and NICs, SR-IOV links, link safety, udev vs sysfs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rte.errors import ConfigError, InputError
from rte.host.machine import PciDevice
from rte.host.pci import parse_hex_id, parse_pci_address, read_pci_devices
from rte.host.sysfs import read_machine
from tests.helpers.paths import MACHINES, SYSFS_FIXTURES

FIXTURES = SYSFS_FIXTURES
INTERESTING = "interesting_devices(net/display/accel/nvme)"


def expected_pci(name: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((FIXTURES / name / "FIXTURE.json").read_text())
    section: dict[str, Any] = facts["expected_facts_parsed_from_tree"]["pci"]
    return section


def is_interesting(device: PciDevice) -> bool:
    """Network, display and accelerator classes, and NVMe controllers: what a pod might pin."""
    return device.class_code[:4] in ("0x02", "0x03", "0x12") or device.class_code == "0x010802"


def as_fixture_row(device: PciDevice) -> dict[str, Any]:
    return {
        "addr": device.address,
        "numa_node": device.numa_node,
        "class": device.class_code,
        "vendor": device.vendor,
        "device": device.device,
        "sriov_totalvfs": device.sriov_totalvfs,
        "driver": device.driver,
    }


def pci_tree(root: Path, devices: dict[str, dict[str, str]], links: dict[str, str] | None = None) -> Path:
    """A sysfs tree with devices/pci0000:00/<address>/<attr> and bus/pci/devices links to them.

    ``links`` maps "<address>/<name>" to a symlink target inside the device directory.
    """
    bus = root / "bus/pci/devices"
    bus.mkdir(parents=True)
    for address, attributes in devices.items():
        device_dir = root / "devices/pci0000:00" / address
        device_dir.mkdir(parents=True)
        for name, content in attributes.items():
            (device_dir / name).write_text(content)
        (bus / address).symlink_to(f"../../../devices/pci0000:00/{address}")
    for rel, target in (links or {}).items():
        (root / "devices/pci0000:00" / rel).symlink_to(target)
    return root


NIC = {"vendor": "0x8086\n", "device": "0x158b\n", "class": "0x020000\n", "numa_node": "1\n"}


# ---- the fixtures ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MACHINES)
def test_each_machine_has_the_pci_devices_per_node_its_fixture_lists(name: str) -> None:
    devices = read_machine(FIXTURES / name / "sys", use_udev=False).pci_devices
    counts = Counter(str(d.numa_node) for d in devices if d.numa_node is not None)
    want = expected_pci(name)
    assert dict(counts) == want["count_by_numa_node"]
    assert [as_fixture_row(d) for d in devices if is_interesting(d)] == want[INTERESTING]


def test_devices_are_sorted_by_address_and_follow_bus_links() -> None:
    devices = read_machine(FIXTURES / "dell-r640-2s-xeon6230r-2numa-sriov-vfs" / "sys").pci_devices
    keys = [parse_pci_address(d.address) for d in devices]
    assert keys == sorted(keys)
    assert len(devices) == 355
    vfs = [d for d in devices if d.device == "0x154c"]
    assert Counter(d.numa_node for d in vfs) == {0: 32, 1: 32}


def test_dangling_driver_links_still_name_the_driver() -> None:
    devices = read_machine(FIXTURES / "dell-r740xd-2s-xeon6230-2numa-nics-hugepages" / "sys").pci_devices
    by_address = {d.address: d for d in devices}
    assert by_address["0000:86:00.0"].driver == "i40e"
    assert by_address["0000:3e:00.0"].driver == "nvme"
    assert sum(d.driver is not None for d in devices) == 71


# ---- SR-IOV, affinity and the forms links take --------------------------------------------


def test_virtual_functions_name_their_physical_function(tmp_path: Path) -> None:
    root = pci_tree(
        tmp_path,
        {
            "0000:3b:00.0": {**NIC, "sriov_totalvfs": "64\n"},
            "0000:3b:02.0": {**NIC, "device": "0x154c\n"},
        },
        links={
            "0000:3b:00.0/driver": "../../../bus/pci/drivers/i40e",
            "0000:3b:02.0/physfn": "../0000:3b:00.0",
            "0000:3b:02.0/driver": "../../../bus/pci/drivers/iavf",
        },
    )
    pf, vf = read_pci_devices(str(root), use_udev=False)
    assert pf == PciDevice("0000:3b:00.0", 1, "0x8086", "0x158b", "0x020000", "i40e", None, 64)
    assert vf == PciDevice("0000:3b:02.0", 1, "0x8086", "0x154c", "0x020000", "iavf", "0000:3b:00.0", None)


def test_numa_node_minus_one_or_absent_means_no_affinity(tmp_path: Path) -> None:
    no_numa = {k: v for k, v in NIC.items() if k != "numa_node"}
    root = pci_tree(tmp_path, {"0000:00:01.0": {**NIC, "numa_node": "-1\n"}, "0000:00:02.0": no_numa})
    assert [d.numa_node for d in read_pci_devices(str(root), use_udev=False)] == [None, None]


def test_wide_domains_sort_numerically(tmp_path: Path) -> None:
    root = pci_tree(
        tmp_path, {a: NIC for a in ("10000:00:00.0", "0000:00:1f.0", "ffff:00:00.0", "0000:00:02.0")}
    )
    addresses = [d.address for d in read_pci_devices(str(root), use_udev=False)]
    assert addresses == ["0000:00:02.0", "0000:00:1f.0", "ffff:00:00.0", "10000:00:00.0"]


def test_links_stored_as_files_holding_their_target_are_followed(tmp_path: Path) -> None:
    # Some copies of sysfs snapshots turn each symlink into a small file holding its target.
    root = pci_tree(tmp_path, {"0000:19:00.0": NIC})
    (root / "bus/pci/devices/0000:19:00.0").unlink()
    (root / "bus/pci/devices/0000:19:00.0").write_text("../../../devices/pci0000:00/0000:19:00.0")
    (root / "devices/pci0000:00/0000:19:00.0/driver").write_text("../../../bus/pci/drivers/mlx5_core")
    (device,) = read_pci_devices(str(root), use_udev=False)
    assert (device.address, device.driver, device.numa_node) == ("0000:19:00.0", "mlx5_core", 1)


def test_a_copy_with_links_dereferenced_reads_the_same(tmp_path: Path) -> None:
    device_dir = tmp_path / "bus/pci/devices/0000:19:00.0"
    device_dir.mkdir(parents=True)
    for name, content in NIC.items():
        (device_dir / name).write_text(content)
    (device,) = read_pci_devices(str(tmp_path), use_udev=False)
    assert (device.address, device.numa_node, device.driver) == ("0000:19:00.0", 1, None)


def test_a_tree_without_a_pci_bus_has_no_devices(tmp_path: Path) -> None:
    assert read_pci_devices(str(tmp_path), use_udev=False) == ()


def test_a_link_that_leaves_the_root_is_refused_instead_of_read(tmp_path: Path) -> None:
    (tmp_path / "bus/pci/devices").mkdir(parents=True)
    (tmp_path / "bus/pci/devices/0000:00:00.0").symlink_to("/sys/devices/pci0000:00/0000:00:00.0")
    with pytest.raises(InputError, match="leaves the sysfs root") as caught:
        read_pci_devices(str(tmp_path), use_udev=False)
    assert caught.value.source == f"{tmp_path}/bus/pci/devices/0000:00:00.0"


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attribute", "content"),
    [("numa_node", "zero\n"), ("vendor", "8086\n"), ("class", "network\n"), ("sriov_totalvfs", "many\n")],
)
def test_malformed_attributes_name_the_file_and_the_text(
    tmp_path: Path, attribute: str, content: str
) -> None:
    root = pci_tree(tmp_path, {"0000:00:01.0": {**NIC, attribute: content}})
    with pytest.raises(InputError) as caught:
        read_pci_devices(str(root), use_udev=False)
    assert caught.value.source == f"{root}/devices/pci0000:00/0000:00:01.0/{attribute}"
    assert content.strip() in caught.value.detail


def test_a_device_without_a_vendor_is_malformed(tmp_path: Path) -> None:
    root = pci_tree(tmp_path, {"0000:00:01.0": {k: v for k, v in NIC.items() if k != "vendor"}})
    with pytest.raises(InputError, match="vendor: missing"):
        read_pci_devices(str(root), use_udev=False)


def test_an_entry_that_is_not_a_pci_address_is_malformed(tmp_path: Path) -> None:
    root = pci_tree(tmp_path, {"0000:00:01.0": NIC})
    (root / "bus/pci/devices/slot-1").symlink_to("../../../devices/pci0000:00/0000:00:01.0")
    with pytest.raises(InputError, match="not a PCI address"):
        read_pci_devices(str(root), use_udev=False)


@pytest.mark.parametrize("text", ["0000:3b:02", "0000:3b:02.8", "0:3b:02.0", "0000:3B:02.0x"])
def test_pci_address_parser_rejects_malformed_addresses(text: str) -> None:
    with pytest.raises(ValueError, match="not a PCI address"):
        parse_pci_address(text)


def test_hex_ids_are_kept_in_the_kernels_lowercase_form() -> None:
    assert parse_hex_id("0x15B3\n") == "0x15b3"
    with pytest.raises(ValueError, match="0xZZ"):
        parse_hex_id("0xZZ")


# ---- udev ----------------------------------------------------------------------------------


def test_udev_cannot_be_forced_onto_a_tree_other_than_the_real_sys() -> None:
    with pytest.raises(ConfigError, match="udev only describes the real /sys"):
        read_machine(FIXTURES / "dell-r740xd-2s-xeon6230-2numa-nics-hugepages" / "sys", use_udev=True)


def test_reading_a_tree_does_not_import_pyudev() -> None:
    # `rte dump` must start fast; pyudev (and libudev through ctypes) loads only for the real /sys.
    root = FIXTURES / "dell-r740xd-2s-xeon6230-2numa-nics-hugepages" / "sys"
    code = (
        "import sys\nfrom rte.host.sysfs import read_machine\n"
        f"assert read_machine({str(root)!r}).pci_devices\nprint('pyudev' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def udev_usable() -> bool:
    try:
        import pyudev

        pyudev.Context()
    except (ImportError, OSError):
        return False
    return os.path.isdir("/sys/bus/pci/devices")


@pytest.mark.skipif(not udev_usable(), reason="pyudev/libudev or /sys/bus/pci unusable here")
def test_udev_and_plain_sysfs_agree_on_this_machines_real_sys() -> None:
    via_udev = read_pci_devices("/sys", use_udev=True)
    via_sysfs = read_pci_devices("/sys", use_udev=False)
    assert via_udev == via_sysfs
    assert read_pci_devices("/sys") == via_udev  # auto picks udev here, with the same answer
    assert len(via_udev) == len(os.listdir("/sys/bus/pci/devices"))


def test_a_device_that_vanished_after_the_bus_was_listed_is_skipped(tmp_path: Path) -> None:
    root = pci_tree(tmp_path, {"0000:3b:00.0": NIC})
    (root / "bus/pci/devices/0000:3b:02.0").symlink_to("../../../devices/pci0000:00/0000:3b:02.0")
    assert [d.address for d in read_pci_devices(root, use_udev=False)] == ["0000:3b:00.0"]
