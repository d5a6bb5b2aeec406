"""PCI functions and their NUMA affinity, from sysfs or (on the real /sys) through udev.

Both paths produce the same :class:`~rte.host.machine.PciDevice` values: udev enumerates
``subsystem == "pci"`` and names the bound driver, plain sysfs reading follows the
``bus/pci/devices/*`` links inside the injected root. libudev always reads the host's ``/sys``,
so it is only usable when the root *is* ``/sys``; fixture trees and snapshots take the sysfs path.
pyudev is imported only when used, keeping start-up fast.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from rte.errors import ConfigError, InputError, UnavailableError
from rte.host.machine import PciDevice
from rte.host.sysfsio import (
    link_name,
    link_target,
    list_dir,
    parse_at,
    parse_int,
    parse_optional_id,
    read_text,
    resolve_under,
)

_ADDRESS = re.compile(r"([0-9a-f]{4,8}):([0-9a-f]{2}):([0-1][0-9a-f])\.([0-7])")
_HEX_ID = re.compile(r"0x[0-9a-f]+")


# ---- parsers ---------------------------------------------------------------------------------


def parse_pci_address(text: str) -> tuple[int, int, int, int]:
    """``"0000:3b:02.1"`` -> (domain, bus, device, function); the numeric sort key of a device.

    Sorting by this rather than by the string keeps wide domains (VMD uses ``10000``) in order.
    """
    match = _ADDRESS.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a PCI address (dddd:bb:dd.f): {text.strip()[:80]!r}")
    domain, bus, dev, fn = match.groups()
    return int(domain, 16), int(bus, 16), int(dev, 16), int(fn, 16)


def parse_hex_id(text: str) -> str:
    """A vendor, device or class attribute ("0x8086\\n") in the kernel's own lowercase form."""
    value = text.replace("\x00", "").strip().lower()
    if _HEX_ID.fullmatch(value) is None:
        raise ValueError(f"not a hex id: {text.strip()[:80]!r}")
    return value


# ---- readers ---------------------------------------------------------------------------------


def read_pci_devices(
    sysfs_root: str | os.PathLike[str], *, use_udev: bool | None = None
) -> tuple[PciDevice, ...]:
    """Every PCI function under ``sysfs_root``, sorted by address.

    ``use_udev=None`` uses udev when the root resolves to ``/sys`` and libudev loads, sysfs
    otherwise; ``True`` insists on udev (ConfigError for another root, UnavailableError without
    libudev); ``False`` never uses it. A tree without ``bus/pci/devices`` has no devices.
    """
    root = os.path.abspath(os.fspath(sysfs_root))
    if use_udev is False:
        return read_pci_sysfs(root)
    on_real_sys = os.path.realpath(root) == "/sys"
    context = _udev_context() if on_real_sys else None
    if context is not None:
        return read_pci_udev(context)
    if use_udev is None:
        return read_pci_sysfs(root)
    if not on_real_sys:
        raise ConfigError("use_udev", f"udev only describes the real /sys, not the sysfs root {root}")
    raise UnavailableError("udev was requested but pyudev/libudev cannot be loaded")


def read_pci_sysfs(root: str) -> tuple[PciDevice, ...]:
    """Walk ``<root>/bus/pci/devices``, following each link only while it stays under root."""
    bus_dir = f"{root}/bus/pci/devices"
    devices = []
    for address in list_dir(bus_dir) or ():
        entry = f"{bus_dir}/{address}"
        key = parse_at(entry, address, parse_pci_address)
        target = link_target(entry)
        # No target: a copy with links dereferenced, where the entry is the device directory.
        device_dir = entry if target is None else resolve_under(root, bus_dir, target, entry)
        device = _device_from_dir(address, device_dir)
        if device is not None:
            devices.append((key, device))
    devices.sort(key=lambda pair: pair[0])
    return tuple(device for _, device in devices)


def _device_from_dir(address: str, device_dir: str) -> PciDevice | None:
    entries = list_dir(device_dir)
    if entries is None:
        # Gone since the bus was listed (VFs come and go when sriov_numvfs changes): one device
        # fewer, not a failed scan.
        return None
    present = set(entries)

    def attribute(name: str) -> str | None:
        return read_text(f"{device_dir}/{name}") if name in present else None

    def link(name: str) -> str | None:
        return link_name(f"{device_dir}/{name}") if name in present else None

    return _build_device(address, device_dir, attribute, link)


def read_pci_udev(context: Any) -> tuple[PciDevice, ...]:
    """Enumerate PCI devices through a ``pyudev.Context`` (the real /sys only)."""
    devices = [_device_from_udev(udev_device) for udev_device in context.list_devices(subsystem="pci")]
    devices.sort(key=lambda pair: pair[0])
    return tuple(device for _, device in devices)


def _device_from_udev(udev_device: Any) -> tuple[tuple[int, int, int, int], PciDevice]:
    address: str = udev_device.sys_name
    device_dir: str = udev_device.sys_path
    attributes = udev_device.attributes

    def attribute(name: str) -> str | None:
        raw = attributes.get(name)
        return None if raw is None else bytes(raw).decode("latin-1")

    def link(name: str) -> str | None:
        # udev names the bound driver itself; it has no accessor for the physfn link.
        return udev_device.driver if name == "driver" else link_name(f"{device_dir}/{name}")

    key = parse_at(device_dir, address, parse_pci_address)
    return key, _build_device(address, device_dir, attribute, link)


def _build_device(
    address: str,
    device_dir: str,
    attribute: Callable[[str], str | None],
    link: Callable[[str], str | None],
) -> PciDevice:
    def hex_id(name: str) -> str:
        text = attribute(name)
        if text is None:
            raise InputError(f"{device_dir}/{name}", "missing: every PCI function has this attribute")
        return parse_at(f"{device_dir}/{name}", text, parse_hex_id)

    numa_text = attribute("numa_node")
    totalvfs_text = attribute("sriov_totalvfs")
    return PciDevice(
        address=address,
        numa_node=None
        if numa_text is None
        else parse_at(f"{device_dir}/numa_node", numa_text, parse_optional_id),
        vendor=hex_id("vendor"),
        device=hex_id("device"),
        class_code=hex_id("class"),
        driver=link("driver"),
        physfn=link("physfn"),
        sriov_totalvfs=None
        if totalvfs_text is None
        else parse_at(f"{device_dir}/sriov_totalvfs", totalvfs_text, parse_int),
    )


def _udev_context() -> Any:
    """A pyudev Context, or None when pyudev or libudev is missing or broken."""
    try:
        import pyudev

        return pyudev.Context()
    except (ImportError, OSError):
        return None
