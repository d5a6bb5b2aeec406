"""The agent's reading side: a :class:`~rte.agent.compute.reading.NodeReading` per cycle, with the state
that lives across cycles.

* the machine (sysfs) is read by the first scan and again when the loop asks (its resync:
  hugepage pools and online CPUs can change at runtime). A re-read that fails keeps the last good
  machine model (one unreadable file must not stop pod changes from being published); the scan
  says so in :attr:`Scan.machine_problem`, and each later scan tries again until a read
  succeeds. Until a first read succeeds there is no model to fall back on: each scan raises
  :class:`NoMachineModel`, which the daemon retries with backoff and one-shot commands report;
* the kubelet config is re-read when its file (or a drop-in) changes, checked by metadata on
  every scan, so a kubelet reconfiguration reaches the NRT without restarting the agent;
* ``GetAllocatableResources`` is cached; the loop re-reads it every few seconds
  (:meth:`Scanner.refresh_allocatable`, a cycle only when the answer changed) and marks it stale
  for the next scan on device plugin changes, the resync and after the kubelet came back; a
  kubelet without it is remembered, so it costs one warning, not one per cycle;
* the last List is kept with its digest, so a poll can tell "changed" from "same again"; it is
  reused by a scan only while no kubelet call failed after it, and :attr:`Scan.kubelet_heard`
  says whether the scan itself talked to the kubelet, so a cycle never takes an old List for a
  sign that the kubelet is back;
* the kubelet's checkpoint files are re-read only when they change.

``rte dump`` uses the same scanner for one reading, so it shows what ``rte run`` would publish.

Errors: :class:`~rte.errors.UnavailableError` (kubelet down), :class:`~rte.errors.InputError`
(bad data; :class:`NoMachineModel` when sysfs was never read); each kubelet failure is reported
to ``on_kubelet_error(method, kind)`` first.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from rte.agent.compute.accounting import Accounting
from rte.agent.compute.podset import SpecMapping, with_departed
from rte.agent.compute.podtally import PodTally
from rte.agent.compute.reading import Checkpoints, KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.errors import InputError, NotSupportedError, RteError, UnavailableError
from rte.host.kubelet_config import KubeletConfig, check_against_machine
from rte.host.kubelet_config_files import load_kubelet_config
from rte.host.kubelet_state import (
    CPU_MANAGER_STATE,
    MEMORY_MANAGER_STATE,
    load_cpu_manager_state,
    load_memory_manager_state,
)
from rte.host.machine import Machine
from rte.model.quantity import Amount
from rte.model.topology import NodeTopology
from rte.podres.reader import pod_limit
from rte.podres.source import KubeletReader, Listing
from rte.podres.types import AllocatableResources, PodResources

log = logging.getLogger(__name__)

T = TypeVar("T")
ErrorHook = Callable[[str, str], None]
ZoneAttributes = Callable[[Machine], Mapping[int, Mapping[str, str]]]


class NoMachineModel(InputError):
    """sysfs has not been read successfully yet (the message is the read's own error, naming the
    file), so there is no machine model to compute with. Still an :class:`InputError` for the
    one-shot commands (exit status 2); the daemon takes it as a reason to retry, not to exit."""


def error_kind(error: BaseException) -> str:
    """A metric label for an error: not_supported, unavailable, invalid or other."""
    if isinstance(error, NotSupportedError):
        return "not_supported"
    if isinstance(error, UnavailableError):
        return "unavailable"
    if isinstance(error, InputError):
        return "invalid"
    return "other"


@dataclass(frozen=True)
class Scan:
    """One computed result.

    ``kubelet_heard``: the scan made a kubelet call that answered (False when it reused the poll's
    List). ``machine_problem``: why the last sysfs read failed, while the last good machine model
    stands in (None when sysfs read fine). ``inconsistent``: why the kubelet's data in this
    cycle contradicted itself (None when consistent; see :mod:`rte.agent.compute.topology`): the object is
    then capped at the last consistent state, and the loop turns this into a readiness reason.
    ``implausible``: the absurd kubelet values this cycle met (see
    :data:`rte.agent.compute.ledger.IMPLAUSIBLE_KINDS`), another readiness reason; None when there were none.
    ``zone_names_warning``: the published zone names may crash a consumer (sparse NUMA ids).
    """

    topology: NodeTopology
    accounting: Accounting
    seconds: float
    kubelet_heard: bool = False
    machine_problem: str | None = None
    inconsistent: str | None = None
    implausible: str | None = None
    zone_names_warning: str | None = None


def pod_keys(pods: Iterable[PodResources]) -> frozenset[tuple[str, str]]:
    return frozenset((p.namespace, p.name) for p in pods)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class _WatchedFile(Generic[T]):
    """One optional file, parsed again only when it changed (by inode, size and mtime).

    Absent means None; unreadable means None with one warning per bad version of the file.
    """

    def __init__(self, path: Path | None, load: Callable[[Path], T], what: str) -> None:
        self.path = path
        self._load = load
        self._what = what
        self._key: object = None
        self._value: T | None = None

    def get(self) -> T | None:
        if self.path is None:
            return None
        key = _stamp(self.path)
        if key != self._key:
            self._key = key
            self._value = None
            if key is not None:
                try:
                    self._value = self._load(self.path)
                except InputError as e:
                    log.warning("ignoring the %s: %s", self._what, e)
        return self._value


class CheckpointFiles:
    """The kubelet's resource manager checkpoints under its root dir, each re-read on change.

    Optional truth (see :class:`~rte.agent.compute.reading.Checkpoints`): a file that is absent (not
    mounted, no static policy) or unreadable is None, and accounting relies on podresources.
    """

    def __init__(self, kubelet_root: Path | None) -> None:
        memory = kubelet_root / MEMORY_MANAGER_STATE if kubelet_root else None
        cpu = kubelet_root / CPU_MANAGER_STATE if kubelet_root else None
        self._memory = _WatchedFile(memory, load_memory_manager_state, "memory manager checkpoint")
        self._cpu = _WatchedFile(cpu, load_cpu_manager_state, "CPU manager checkpoint")

    def read(self) -> Checkpoints:
        return Checkpoints(memory=self._memory.get(), cpu=self._cpu.get())


class KubeletConfigCache:
    """The kubelet config, re-read only when the file or its drop-in directory changed."""

    def __init__(self, path: Path | None, config_dir: Path | None) -> None:
        self.path = path
        self.config_dir = config_dir
        self._key: object = None
        self._config: KubeletConfig | None = None

    def _fingerprint(self) -> object:
        assert self.path is not None
        drop_ins: tuple[object, ...] = ()
        if self.config_dir is not None:
            try:
                names = sorted(n for n in os.listdir(self.config_dir) if n.endswith(".conf"))
            except OSError:
                names = []
            drop_ins = tuple((n, _stamp(self.config_dir / n)) for n in names)
        return (_stamp(self.path), drop_ins)

    def get(self) -> KubeletConfig | None:
        if self.path is None:
            return None
        key = self._fingerprint()
        if key != self._key or self._config is None:
            config = load_kubelet_config(self.path, self.config_dir)  # InputError when bad or absent
            if self._config is not None and config != self._config:
                log.info("kubelet config %s changed; re-read", self.path)
            self._config, self._key = config, key
        return self._config


class Scanner:
    """Reads the node into a :class:`~rte.agent.compute.reading.NodeReading`; used by the loop thread only.

    ``reader`` None: there is no kubelet to ask (``rte dump`` when nothing answers); readings then
    hold the machine and the kubelet config only. ``pod_tally`` False: no running sums over the
    pods (:mod:`rte.agent.compute.podtally`), each scan accounts every pod (same result, slower).
    """

    def __init__(
        self,
        *,
        node_name: str,
        reader: KubeletReader | None,
        machine_loader: Callable[[], Machine],
        kubelet_config: KubeletConfigCache,
        rules: PublishingRules,
        checkpoints: CheckpointFiles | None = None,
        zone_attributes: ZoneAttributes | None = None,
        on_kubelet_error: ErrorHook | None = None,
        pod_tally: bool = True,
        max_listed_pods: int = 0,
    ) -> None:
        self._node_name = node_name
        self.reader = reader
        self._load_machine = machine_loader
        self._config = kubelet_config
        self._rules = rules
        self._checkpoints = checkpoints or CheckpointFiles(None)
        self._zone_attributes = zone_attributes
        self._on_error = on_kubelet_error or (lambda method, kind: None)
        self._max_listed_pods = max_listed_pods
        if reader is not None:  # until a kubelet config is read (each scan follows its maxPods)
            reader.pod_limit = pod_limit(None, max_listed_pods)
        # Read by the first scan, not here: a daemon starting on an unreadable sysfs must retry.
        self._machine: Machine | None = None
        self._machine_stale = True
        self.machine_problem: str | None = None
        self._allocatable: AllocatableResources | None = None
        self._allocatable_stale = True
        self._allocatable_supported = True
        self.allocatable_problem: str | None = None
        """Why the last GetAllocatableResources call failed (unreachable, timed out or an answer
        that does not decode); None once it answers (or is known unsupported)."""
        self._last_consistent: dict[tuple[str, str], Amount] = {}
        self.listing: Listing | None = None
        # Sums over the listed pods, kept across scans (None: every scan walks every pod, the
        # benchmarks' baseline).
        self.tally = PodTally() if pod_tally else None
        self._listing_current = False  # no kubelet call failed since self.listing was made
        # The pod specs the last reading used: a pod the API deleted keeps its spec while the
        # kubelet still lists it (rte.agent.compute.podset.with_departed).
        self._specs: SpecMapping = {}
        self._heard = False  # a kubelet call answered during the current scan

    def _kubelet(self, method: str, call: Callable[[KubeletReader], T]) -> T:
        if self.reader is None:
            raise UnavailableError(f"no kubelet to call {method} on")
        try:
            result = call(self.reader)
        except NotSupportedError as e:
            self._on_error(method, error_kind(e))
            self._heard = True  # an answer all the same: the kubelet is there
            raise
        except RteError as e:
            self._on_error(method, error_kind(e))
            self._listing_current = False
            raise
        self._heard = True
        return result

    def poll(self) -> bool:
        """List now; True when the result differs from the last one seen (first time: True)."""
        listing = self._kubelet("List", lambda reader: reader.list())
        changed = self.listing is None or listing.digest != self.listing.digest
        self.listing = listing
        self._listing_current = True
        return changed

    def refresh_allocatable(self) -> bool:
        """Re-read ``GetAllocatableResources`` now; True when the answer differs from the one in use.

        The periodic refresh calls this, so that an unchanged answer (the common case) costs one
        local gRPC call and no cycle, while a device that turned unhealthy (the kubelet drops it
        from the answer) reaches the NRT at the next tick.
        """
        before, supported = self._allocatable, self._allocatable_supported
        self._allocatable_stale = True
        self._refresh_allocatable()
        return self._allocatable != before or self._allocatable_supported != supported

    def mark_allocatable_stale(self, *, machine: bool = False) -> None:
        """Re-read allocatable (and sysfs when ``machine``) on the next scan."""
        self._allocatable_stale = True
        self._machine_stale = self._machine_stale or machine

    def _refresh_machine(self) -> None:
        if not self._machine_stale:
            return
        try:
            machine = self._load_machine()
        except InputError as e:  # sysfs I/O errors arrive as InputError naming the file
            if self._machine is None:  # nothing to fall back on: this scan cannot be made
                raise NoMachineModel(e.source, e.detail) from e
            self.machine_problem = str(e)  # stays stale: the next scan tries again
            return
        self._machine = machine
        self._machine_stale = False
        self.machine_problem = None

    def _refresh_allocatable(self) -> None:
        if not self._allocatable_stale:
            return
        try:
            allocatable = self._kubelet("GetAllocatableResources", lambda reader: reader.get_allocatable())
        except NotSupportedError as e:
            self.allocatable_problem = None
            if self._allocatable_supported:
                log.warning("%s; allocatable comes from sysfs and the kubelet config", e)
            self._allocatable_supported = False
            allocatable = None
        except RteError as e:  # one failed call, whether it timed out or answered garbage
            self.allocatable_problem = str(e)
            raise
        else:
            self.allocatable_problem = None
            if not self._allocatable_supported:
                log.info("kubelet now offers GetAllocatableResources")
            self._allocatable_supported = True
            if self._allocatable is not None and allocatable != self._allocatable:
                log.info("kubelet allocatable resources changed")
        self._allocatable = allocatable
        self._allocatable_stale = False

    def _read_kubelet(self, fresh_list: bool) -> KubeletReading:
        self._refresh_allocatable()
        if fresh_list or not self._listing_current or self.listing is None:
            self.poll()
        assert self.listing is not None
        if self.tally is not None:  # with the reader's word on what changed, when it has one
            self.tally.sync(self.listing.pods, self.listing.change)
        return KubeletReading(self._allocatable, self.listing.pods, self._checkpoints.read(), self.tally)

    def read(self, *, fresh_list: bool, specs: SpecMapping | None = None) -> NodeReading:
        """Read the node; ``fresh_list`` False reuses the last List (a poll just made it), unless
        a kubelet call failed since."""
        self._refresh_machine()
        machine = self._machine
        assert machine is not None  # _refresh_machine raised NoMachineModel otherwise
        config = self._config.get()
        if config is not None:
            check_against_machine(config, machine.cpus, machine.node_ids)
        if self.reader is not None:
            self.reader.pod_limit = pod_limit(config.max_pods if config else None, self._max_listed_pods)
        kubelet = self._read_kubelet(fresh_list) if self.reader is not None else None
        if specs is not None and kubelet is not None:
            listed = kubelet.tally.listed_keys() if kubelet.tally is not None else pod_keys(kubelet.pods)
            specs = self._specs = with_departed(specs, self._specs, listed)
        return NodeReading(
            node_name=self._node_name,
            machine=machine,
            config=config,
            kubelet=kubelet,
            rules=self._rules,
            specs=specs,
            zone_attributes=self._zone_attributes(machine) if self._zone_attributes else {},
            last_consistent=self._last_consistent,
        )

    def scan(self, *, fresh_list: bool, specs: SpecMapping | None = None) -> Scan:
        """Read the node and compute its object (see :meth:`read`).

        A consistent result becomes the ceiling of later inconsistent ones (``last_consistent``).
        """
        start = time.perf_counter()
        self._heard = False
        computed = compute_topology(self.read(fresh_list=fresh_list, specs=specs))
        if computed.consistent:
            self._last_consistent = computed.available()
        return Scan(
            computed.topology,
            computed.accounting,
            time.perf_counter() - start,
            kubelet_heard=self._heard,
            machine_problem=self.machine_problem,
            inconsistent=None if computed.consistent else _inconsistency(computed.accounting),
            implausible=_implausible(computed.accounting),
            zone_names_warning=computed.zone_names_warning,
        )


def _inconsistency(accounting: Accounting) -> str:
    """The readiness reason for a cycle whose kubelet data contradicted itself."""
    kinds = sorted({f.kind for f in accounting.findings if f.inconsistent})
    return f"{', '.join(kinds)}; published availability capped at the last consistent cycle"


IMPLAUSIBLE_SHOWN = 3
"""How many absurd values a readiness reason names (the metric counts them all)."""


def _implausible(accounting: Accounting) -> str | None:
    """The readiness reason for absurd kubelet values (each finding is also logged and counted)."""
    found = [f for f in accounting.findings if f.implausible]
    if not found:
        return None
    shown = "; ".join(f"{f.kind}: {f.detail}" for f in found[:IMPLAUSIBLE_SHOWN])
    more = f" (and {len(found) - IMPLAUSIBLE_SHOWN} more)" if len(found) > IMPLAUSIBLE_SHOWN else ""
    return f"{shown}{more}; published the safe value"
