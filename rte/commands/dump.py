"""``rte dump``: the NodeResourceTopology this node would publish, computed locally.

The node is read once through the daemon's own reader (:class:`rte.agent.scanner.Scanner`: sysfs,
the kubelet config file, podresources over the socket or a scenario directory in the fixture
layout, the checkpoint files under ``--kubelet-root``) and the object is computed by the same
:func:`rte.agent.compute.topology.compute_topology`, so it is what ``rte run --once --no-publish``
prints for the same inputs. Nothing is written anywhere; the reader's warnings are shown on stderr.

Which kubelet: an explicit ``--podresources`` must answer (a regular file, another scheme or a
missing path is bad input, exit 2; a kubelet that does not answer is exit 1). Without it, the
kubelet's default socket is asked if it is there, and hardware capacity is shown, with one line
on stderr saying so, when nothing answers; ``--no-kubelet`` shows hardware capacity without asking.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from rte.agent.compute.reading import NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.agent.scanner import CheckpointFiles, KubeletConfigCache, Scanner
from rte.commands.render import render_table
from rte.errors import ConfigError, UnavailableError
from rte.host.sysfs import read_machine
from rte.model.names import object_name_problem
from rte.model.nrt import to_nrt
from rte.model.topology import NodeTopology
from rte.model.vocabulary import FingerprintMethod, NumaPlacementMode, ZoneNames
from rte.podres.reader import (
    ONE_SHOT_BURST,
    ONE_SHOT_QPS,
    endpoint_problem,
    may_answer,
    open_reader,
)
from rte.podres.source import DEFAULT_ENDPOINT, KubeletReader

DEFAULT_SYSFS = "/sys"
KUBELET_TIMEOUT = 2.0
"""Seconds to wait for the kubelet before showing hardware capacity instead."""


@contextlib.contextmanager
def _warnings_to(err: TextIO) -> Iterator[None]:
    """Show the readers' logged warnings as the command's own one-line warnings on ``err``."""
    handler = logging.StreamHandler(err)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("rte: warning: %(message)s"))
    logger = logging.getLogger("rte")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def read_node(
    *,
    sysfs_root: str | None,
    node_name: str | None,
    podresources: str | None = None,
    kubelet_config: str | None = None,
    kubelet_dir: str | None = None,
    method: FingerprintMethod = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES,
    numa_placement: NumaPlacementMode = NumaPlacementMode.CONTAINER,
    zone_names: ZoneNames = ZoneNames.NUMA_ID,
    timeout: float = KUBELET_TIMEOUT,
    ask_kubelet: bool = True,
    default_endpoint: str = DEFAULT_ENDPOINT,
    err: TextIO,
) -> NodeReading:
    """One reading through the daemon's scanner; ``reading.kubelet`` is None when none answered.

    ``podresources`` None: ``default_endpoint``, best effort (module docstring).
    """
    name = node_name or socket.gethostname().lower()  # as rte run names its object
    problem = object_name_problem(name)
    if problem:
        raise ConfigError(
            "--node-name", problem if node_name else f"{problem} (the host name; give --node-name)"
        )
    machine = read_machine(Path(sysfs_root or DEFAULT_SYSFS))  # PCI devices too, for the table
    config = KubeletConfigCache(Path(kubelet_config) if kubelet_config else None, None)
    config.get()  # a bad file is reported before the kubelet is asked
    checkpoints = CheckpointFiles(Path(kubelet_dir) if kubelet_dir else None)

    def scanner(reader: KubeletReader | None) -> Scanner:
        return Scanner(
            node_name=name,
            reader=reader,
            machine_loader=lambda: machine,
            kubelet_config=config,
            rules=PublishingRules(method, numa_placement=numa_placement, zone_names=zone_names),
            checkpoints=checkpoints,
        )

    if podresources is not None:
        problem = endpoint_problem(podresources)
        if problem:
            raise ConfigError("--podresources", f"{podresources}: {problem}")
        with _warnings_to(err):
            reader = open_reader(podresources, timeout=timeout, qps=ONE_SHOT_QPS, burst=ONE_SHOT_BURST)
            try:
                reader.wait_ready(timeout)
                return scanner(reader).read(fresh_list=True)
            finally:
                reader.close()
    if not ask_kubelet:
        return scanner(None).read(fresh_list=True)
    endpoint = default_endpoint
    with _warnings_to(err):
        if may_answer(endpoint):
            reader = open_reader(endpoint, timeout=timeout, qps=ONE_SHOT_QPS, burst=ONE_SHOT_BURST)
            try:
                reader.wait_ready(timeout)
                return scanner(reader).read(fresh_list=True)
            except UnavailableError as e:
                print(f"rte: warning: {e}", file=err)
            finally:
                reader.close()
        print(
            f"rte: no kubelet podresources at {endpoint}: showing hardware capacity"
            " (allocatable = available = capacity)",
            file=err,
        )
        return scanner(None).read(fresh_list=True)


def dump(
    *,
    sysfs_root: str | None,
    node_name: str | None,
    output: str,
    podresources: str | None = None,
    kubelet_config: str | None = None,
    kubelet_dir: str | None = None,
    method: FingerprintMethod = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES,
    numa_placement: NumaPlacementMode = NumaPlacementMode.CONTAINER,
    zone_names: ZoneNames = ZoneNames.NUMA_ID,
    ask_kubelet: bool = True,
) -> NodeTopology:
    out, err = sys.stdout, sys.stderr
    if podresources is not None and not ask_kubelet:
        raise ConfigError("--no-kubelet", "contradicts --podresources")
    reading = read_node(
        sysfs_root=sysfs_root,
        node_name=node_name,
        podresources=podresources,
        kubelet_config=kubelet_config,
        kubelet_dir=kubelet_dir,
        method=method,
        numa_placement=numa_placement,
        zone_names=zone_names,
        ask_kubelet=ask_kubelet,
        err=err,
    )
    computed = compute_topology(reading)
    topology, accounting = computed.topology, computed.accounting
    for finding in accounting.findings:
        print(f"rte: warning: {finding.kind}: {finding.detail}", file=err)
    if computed.placement is not None and computed.placement.refused:
        print(f"rte: warning: no numaplacement published: {computed.placement.skipped}", file=err)
    if computed.zone_names_warning is not None:
        print(f"rte: warning: {computed.zone_names_warning}", file=err)
    if output == "json":
        json.dump(to_nrt(topology), out, indent=2)
        out.write("\n")
    elif output == "yaml":
        import yaml

        yaml.safe_dump(to_nrt(topology), out, sort_keys=False, default_flow_style=False)
    else:
        pinned: dict[int, list[str]] = {}
        if computed.placement is not None and computed.placement.metadata is not None:
            for cid, numa in computed.placement.containers:
                pinned.setdefault(numa, []).append(f"{cid.namespace}/{cid.pod}/{cid.container}")
        out.write(render_table(topology, reading.machine, pinned, numbering=computed.numbering))
    return topology
