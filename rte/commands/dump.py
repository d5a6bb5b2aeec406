"""``rte dump``: the NodeResourceTopology this node would publish, computed locally.

Reads sysfs, and the kubelet when it is reachable (podresources socket or a scenario directory
in the fixture layout, plus an optional kubelet config file). Without kubelet data it shows
hardware capacity and says so on stderr. Nothing is written anywhere.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rte.agent.compute import compute_topology
from rte.agent.kubelet import open_reader
from rte.agent.reading import Checkpoints, KubeletReading, NodeReading, PublishingRules
from rte.commands.render import render_table
from rte.errors import NotSupportedError, UnavailableError
from rte.host.kubelet_config_files import load_kubelet_config
from rte.host.kubelet_state import MEMORY_MANAGER_STATE, MemoryManagerState, load_memory_manager_state
from rte.host.sysfs import read_machine
from rte.model import fingerprint as fp
from rte.model.nrt import to_nrt
from rte.model.topology import NodeTopology
from rte.podres.source import DEFAULT_ENDPOINT
from rte.podres.types import AllocatableResources, PodResources

DEFAULT_SYSFS = "/sys"
# A one-shot command makes three calls: the kubelet's own limit (100 QPS, burst 10) is far away.
ONE_SHOT_QPS = 20.0
ONE_SHOT_BURST = 5


@dataclass(frozen=True)
class KubeletData:
    """What the kubelet told us; ``allocatable`` None means "not known"."""

    allocatable: AllocatableResources | None
    pods: tuple[PodResources, ...]
    source: str


def _socket_path(endpoint: str) -> str | None:
    if endpoint.startswith("unix://"):
        return endpoint[len("unix://") :]
    if endpoint.startswith("/") or endpoint.startswith("."):
        return endpoint
    return None


def read_kubelet(endpoint: str, *, timeout: float, err: TextIO) -> KubeletData | None:
    """Ask the kubelet (a socket) or read a scenario directory; None when nothing answers.

    The same readers as ``rte run`` (:func:`rte.agent.kubelet.open_reader`), used once.
    """
    path = _socket_path(endpoint)
    if path is not None and not os.path.exists(path):
        return None  # no socket (and no scenario directory): skip importing grpc altogether
    reader = open_reader(endpoint, timeout=timeout, qps=ONE_SHOT_QPS, burst=ONE_SHOT_BURST)
    try:
        try:
            reader.wait_ready(timeout)
            pods = reader.list().pods
        except UnavailableError as e:
            print(f"rte: warning: {e}", file=err)
            return None
        try:
            allocatable: AllocatableResources | None = reader.get_allocatable()
        except NotSupportedError as e:
            print(f"rte: warning: {e}; allocatable comes from sysfs and the kubelet config", file=err)
            allocatable = None
        return KubeletData(allocatable, pods, reader.endpoint)
    finally:
        reader.close()


def read_memory_state(kubelet_dir: str | None) -> MemoryManagerState | None:
    """The memory manager checkpoint under the kubelet root dir, when there is one."""
    if not kubelet_dir:
        return None
    path = Path(kubelet_dir) / MEMORY_MANAGER_STATE
    return load_memory_manager_state(path) if path.is_file() else None


def dump(
    *,
    sysfs_root: str | None,
    node_name: str | None,
    output: str,
    podresources: str | None = None,
    kubelet_config: str | None = None,
    kubelet_dir: str | None = None,
    method: str = fp.METHOD_WITH_EXCLUSIVE_RESOURCES,
    timeout: float = 2.0,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> NodeTopology:
    out = out or sys.stdout
    err = err or sys.stderr
    machine = read_machine(Path(sysfs_root or DEFAULT_SYSFS))
    config = load_kubelet_config(Path(kubelet_config)) if kubelet_config else None
    endpoint = podresources or DEFAULT_ENDPOINT
    kubelet = read_kubelet(endpoint, timeout=timeout, err=err)
    if kubelet is None:
        print(
            f"rte: no kubelet podresources at {endpoint}: showing hardware capacity"
            " (allocatable = available = capacity)",
            file=err,
        )
    reading = NodeReading(
        node_name=node_name or socket.gethostname(),
        machine=machine,
        config=config,
        kubelet=(
            KubeletReading(kubelet.allocatable, kubelet.pods, Checkpoints(read_memory_state(kubelet_dir)))
            if kubelet
            else None
        ),
        rules=PublishingRules(method),
    )
    computed = compute_topology(reading)
    topology, accounting = computed.topology, computed.accounting
    for finding in accounting.findings:
        print(f"rte: warning: {finding.kind}: {finding.detail}", file=err)
    if output == "json":
        json.dump(to_nrt(topology), out, indent=2)
        out.write("\n")
    elif output == "yaml":
        import yaml

        yaml.safe_dump(to_nrt(topology), out, sort_keys=False, default_flow_style=False)
    else:
        out.write(render_table(topology, machine))
    return topology
