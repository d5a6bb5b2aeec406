"""The agent loop: triggers in, one coalesced cycle at a time, NRT out.

Triggers (each a *reason*, counted in ``rte_agent_triggers_total``):

* ``start``: one cycle as soon as the agent runs;
* ``kubelet``: the podresources List poll (every ``poll_interval``) saw a different result.
  This is how pod changes propagate, within about ``poll_interval + debounce``, without any
  external hook; an unchanged List costs one local gRPC call and a digest, nothing more;
* ``pods``: the watch of the pods bound to this node changed (fingerprint spec rule);
* ``notify``, ``kubelet-state``, ``device-plugins``: file triggers (:mod:`rte.agent.watch.files`);
  ``device-plugins`` also makes the next cycle re-read GetAllocatableResources;
* ``allocatable``: the periodic re-read of GetAllocatableResources (``allocatable_refresh``,
  seconds: the kubelet drops unhealthy devices from it, and no file tells of that) found a
  different answer; an unchanged one costs the call and nothing else;
* ``kubelet-recovered``: the kubelet answers again after failing (it may have restarted with new
  allocatable resources, so that is re-read too, and the stored NRT is re-read as on a resync);
* ``admission-error``: the kubelet refused a pod of this node at admission over alignment
  (:mod:`rte.agent.watch.rejections`): the scheduler's view was wrong, so allocatable, the List and
  the stored NRT are all read again at once;
* ``nrt-changed``: the watch of the agent's own NRT (:mod:`rte.agent.watch.nrtwatch`) saw it deleted
  or edited by someone else: the stored object is re-read and repaired at once;
* ``periodic``: the resync timer (``resync_interval``), a safety net. It also re-reads the stored
  NRT, so one deleted or edited behind our back is recreated or repaired, and sysfs (hugepages
  reserved or CPUs onlined at run time);
* ``retry`` / ``deferred``: a failed cycle's retry (exponential backoff with jitter), or a write
  held back by the write rate limit.

A burst of triggers becomes one cycle (:class:`~rte.agent.pacing.Coalescer`). A cycle scans
(reusing the poll's List when only the poll or the pod watch triggered it and the kubelet has
not failed since), computes the canonical object, and publishes unless it equals the last object
published successfully; the periodic cycle always asks the publisher, which itself writes only
when the stored content differs. Writes are rate limited (``publish_qps``/``publish_burst``).

What the agent claims stays true (:mod:`rte.agent.status`): the kubelet counts as back only
when a call to it answered (a cycle that reused a List never says so), so while the kubelet is
down every cycle lists afresh, fails, and publishes nothing; only a cycle that confirmed the
stored object lets the heartbeat Lease be renewed. A sysfs re-read that fails leaves the last
good machine model in place: pod changes are still published while readiness names the file.
Until sysfs was read once there is no model at all: cycles fail (``sysfs: ...``) and are
retried with backoff, so an agent started on an unreadable sysfs publishes as soon as it reads.

Failures never end the loop: the kubelet unreachable, bad input, the apiserver failing or the
CRD missing each make the agent unready, are logged once per change of state (not once per
retry) and are retried with backoff, keeping the last good object in place.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from rte.agent.compute.podspec import PodSpec
from rte.agent.heaptrim import HeapTrim
from rte.agent.kubeletstate import KubeletState
from rte.agent.metrics import AgentMetrics
from rte.agent.pacing import Backoff, Coalescer, NonBlockingTokenBucket
from rte.agent.scanner import NoMachineModel, Scan, Scanner
from rte.agent.settings import AgentSettings
from rte.agent.status import AgentStatus
from rte.errors import InputError, PublishError, RteError, UnavailableError
from rte.model.attributes import TOPOLOGY_MANAGER_POLICY
from rte.model.topology import NodeTopology

log = logging.getLogger(__name__)

TICK = 1.0
"""Longest idle wait: the loop reports liveness at least this often."""

# Reasons whose cycle may reuse the List the poll just made; any other reason lists afresh.
_LIST_FRESH_ENOUGH = frozenset({"kubelet", "pods", "deferred"})
# Reasons whose cycle re-reads the stored NRT even when the computed object did not change.
_VERIFY = frozenset({"periodic", "kubelet-recovered", "admission-error", "nrt-changed"})
# Reasons that make the next cycle re-read GetAllocatableResources.
_REREAD_ALLOCATABLE = frozenset({"device-plugins", "admission-error"})


class Publishing(Protocol):
    """What the loop needs of :class:`rte.agent.publish.publisher.Publisher`."""

    def crd_ready(self) -> bool: ...

    def publish(self, topology: NodeTopology) -> str: ...

    def forget(self) -> None: ...


class PodSnapshots(Protocol):
    """What the loop needs of :class:`rte.agent.watch.podwatch.NodePodWatch`."""

    def synced(self) -> bool: ...

    def pods(self) -> Mapping[tuple[str, str], PodSpec]: ...


class Shutdown(BaseException):
    """Raised inside a retry sleep when the agent is stopping, to abandon the current cycle.

    A BaseException so that library code catching ``Exception`` lets it through.
    """


class OutputClosed(Shutdown):
    """The reader of the ``--no-publish`` output went away (``rte run --no-publish | head``):
    the sink raises it and the agent stops, as a command line tool does on a closed pipe."""


def interruptible_sleep(stop: threading.Event) -> Callable[[float], None]:
    """A ``sleep`` for retry loops that ends early, raising :class:`Shutdown`, once ``stop`` is set."""

    def sleep(seconds: float) -> None:
        if stop.wait(seconds):
            raise Shutdown()

    return sleep


class Agent:
    """The loop; :meth:`run` in one thread, :meth:`trigger` and :meth:`stop` from any thread."""

    def __init__(
        self,
        settings: AgentSettings,
        scanner: Scanner,
        *,
        metrics: AgentMetrics,
        status: AgentStatus,
        publisher: Publishing | None = None,
        pods: PodSnapshots | None = None,
        sink: Callable[[NodeTopology], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
        stop_event: threading.Event | None = None,
    ) -> None:
        self.settings = settings
        self.scanner = scanner
        self.metrics = metrics
        self.status = status
        self.publisher = publisher
        self.pods = pods
        self.sink = sink
        self._clock = clock
        self._wall = wall
        self.stop_event = stop_event or threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._inbox: list[tuple[str, float]] = []
        now = clock()
        s = settings
        self._coalescer = Coalescer(s.debounce, s.max_delay)
        self._writes = NonBlockingTokenBucket(s.publish_qps, s.publish_burst, now)
        self._retry = Backoff(s.retry_base, s.retry_cap, rng)
        self._kubelet = KubeletState(status, Backoff(s.retry_base, s.retry_cap, rng))
        self._next_poll = now + s.poll_interval if s.poll_interval > 0 else math.inf
        self._next_resync = now + s.resync_interval
        self._next_allocatable = now + s.allocatable_refresh if s.allocatable_refresh > 0 else math.inf
        self.last_published: NodeTopology | None = None
        self.last_scan: Scan | None = None
        self.last_error: str | None = None
        self._printed: NodeTopology | None = None
        self._crd_ok = False
        self._failure: str | None = None
        self._pods_synced = False
        self.heap = HeapTrim()
        self._findings: frozenset[tuple[str, str]] = frozenset()
        self._zone_names_warning: str | None = None
        self._machine_problem: str | None = None
        self.output_closed = False
        self.trigger("start")

    # -- from any thread ------------------------------------------------------------------------

    def trigger(self, reason: str) -> None:
        with self._lock:
            self._inbox.append((reason, self._clock()))
        self._wake.set()

    def stop(self) -> None:
        self.stop_event.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self.stop_event.is_set()

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> None:
        """Loop until :meth:`stop`."""
        while not self.stopping:
            delay = self.step()
            if not self.stopping:
                self._wake.wait(delay)

    def run_once(self) -> bool:
        """One cycle now; True when it succeeded (the error is in :attr:`last_error`)."""
        with self._lock:
            self._inbox.clear()
        self._cycle(frozenset({"start"}))
        return self.last_error is None

    def step(self) -> float:
        """Handle what is due now; return how long to wait before the next step."""
        now = self._clock()
        self.status.tick(now)
        self._wake.clear()  # before draining, so a trigger arriving meanwhile wakes the next wait
        with self._lock:
            inbox, self._inbox = self._inbox, []
        for reason, at in inbox:
            self.metrics.triggers.inc(reason=reason)
            if reason in _REREAD_ALLOCATABLE:
                self.scanner.mark_allocatable_stale()
            self._coalescer.add(reason, at)
        if self.pods is not None and not self._pods_synced and self.pods.synced():
            self._pods_synced = True  # from now on the fingerprint follows the spec rule
            self.heap.pods_listed()
            self._add("pods", now)
        if now >= self._next_resync:
            self._next_resync = now + self.settings.resync_interval
            self.scanner.mark_allocatable_stale(machine=True)
            self._add("periodic", now)
        if now >= self._next_allocatable:
            self._next_allocatable = now + self.settings.allocatable_refresh
            self._refresh_allocatable(now)
        if now >= self._next_poll:
            self._poll()
        due = self._coalescer.due_at()
        if due is not None and due <= self._clock() and not self.stopping:
            self._cycle(self._coalescer.take())
        now = self._clock()
        self.metrics.ready.set(1.0 if self.status.readiness(now)[0] else 0.0)
        pending = self._coalescer.due_at()
        deadlines = [self._next_poll, self._next_resync, self._next_allocatable, now + TICK]
        if pending is not None:
            deadlines.append(pending)
        return max(0.0, min(deadlines) - now)

    def _add(self, reason: str, now: float, not_before: float | None = None) -> None:
        self.metrics.triggers.inc(reason=reason)
        self._coalescer.add(reason, now, not_before=not_before)

    # -- kubelet poll ---------------------------------------------------------------------------

    def _poll(self) -> None:
        now = self._clock()
        self.status.busy(now, "podresources List")
        self.metrics.polls.inc()
        try:
            changed = self.scanner.poll()
        except RteError as e:
            self._kubelet.failed(e)
            self._next_poll = now + max(self.settings.poll_interval, self._kubelet.retry.next())
            return
        finally:
            self.status.idle(self._clock())
        self._next_poll = self._clock() + self.settings.poll_interval
        if self._kubelet.recovered():
            self.scanner.mark_allocatable_stale()
            self._coalescer.release()  # no need to sit out a retry delay the kubelet caused
            self._add("kubelet-recovered", now)
        if changed:
            self.metrics.changes.inc()
            self._add("kubelet", now)

    def _refresh_allocatable(self, now: float) -> None:
        """Re-read allocatable (a local gRPC call; sysfs waits for the resync): a cycle only if it changed."""
        try:
            changed = self.scanner.refresh_allocatable()
        except RteError:  # the next scan asks again
            self.scanner.mark_allocatable_stale()
            return
        finally:
            self._kubelet.allocatable(self.scanner.allocatable_problem)
        if changed:
            self._add("allocatable", now)

    # -- one cycle ------------------------------------------------------------------------------

    def _cycle(self, reasons: frozenset[str]) -> None:
        self.status.busy(self._clock(), "cycle")
        try:
            self._run_cycle(reasons)
        except OutputClosed:
            self.output_closed = True
            self.stop()
        except Shutdown:
            log.info("shutting down: abandoned the current cycle")
        except Exception as e:  # a bug must not end the agent; report it and retry like any failure
            log.exception("cycle failed unexpectedly")
            self._fail("internal", e, reasons)
        finally:
            self.status.idle(self._clock())

    def _run_cycle(self, reasons: frozenset[str]) -> None:
        # While the kubelet is down, a List from before is no evidence of anything: ask again.
        fresh = bool(reasons - _LIST_FRESH_ENOUGH) or self._kubelet.down is not None
        specs = self.pods.pods() if self.pods is not None and self.pods.synced() else None
        try:
            scan = self.scanner.scan(fresh_list=fresh, specs=specs)
        except UnavailableError as e:
            self._kubelet.allocatable(self.scanner.allocatable_problem)
            self._kubelet.failed(e)
            self._fail("kubelet", e, reasons)
            return
        except NoMachineModel as e:
            self._no_machine(str(e))
            self._fail("sysfs", e, reasons)
            return
        except InputError as e:
            self._kubelet.allocatable(self.scanner.allocatable_problem)
            self._fail("input", e, reasons)
            return
        self._kubelet.allocatable(self.scanner.allocatable_problem)
        if scan.kubelet_heard and self._kubelet.recovered():
            self.scanner.mark_allocatable_stale()
            reasons = reasons | {"kubelet-recovered"}
        self._record_scan(scan)
        topology = scan.topology
        if self.publisher is None:
            if topology != self._printed and self.sink is not None:
                self.sink(topology)
            self._printed = topology
            self._succeeded()
            return
        verify = bool(reasons & _VERIFY)
        if topology == self.last_published and not verify:
            self.metrics.writes.inc(outcome="skipped")
            self._succeeded()
            return
        now = self._clock()
        if not self._writes.try_take(now):
            # Over the write budget: run again when a token is there, keeping a pending verify.
            not_before = self._writes.next_at(now)
            self._coalescer.add("deferred", now, not_before=not_before)
            for reason in reasons & _VERIFY:
                self._coalescer.add(reason, now, not_before=not_before)
            return
        self._publish(topology, verify, reasons)

    def _publish(self, topology: NodeTopology, verify: bool, reasons: frozenset[str]) -> None:
        assert self.publisher is not None
        try:
            if not self._crd_ok:
                crd_ready = self.publisher.crd_ready()
                self.status.api_answered(self._clock())
                if not crd_ready:
                    self.status.problem("crd", "the NodeResourceTopology CRD is not installed")
                    self._fail("crd", "waiting for the NodeResourceTopology CRD to be installed", reasons)
                    return
                self._crd_ok = True
                self.status.problem("crd", None)
            if verify:
                self.publisher.forget()
            start = self._clock()
            outcome = self.publisher.publish(topology)
            self.metrics.publish_seconds.observe(self._clock() - start)
        except (UnavailableError, PublishError) as e:
            self.metrics.writes.inc(outcome="failed")
            self.status.api_failed(str(e))
            self._crd_ok = False  # a missing CRD shows up as a failed write: check it next time
            self.last_published = None  # the write may have landed or not: ask the publisher next time
            self._fail("apiserver", e, reasons)
            return
        if verify or str(outcome) != "skipped":  # a skip may have been decided without a request
            self.status.api_answered(self._clock())
        self.last_published = topology
        self.metrics.writes.inc(outcome=str(outcome))
        self.metrics.last_publish.set(self._wall())
        self._succeeded()

    def _record_scan(self, scan: Scan) -> None:
        self.last_scan = scan
        known = any(a.name == TOPOLOGY_MANAGER_POLICY for a in scan.topology.attributes)
        self.metrics.policy_known.set(1.0 if known else 0.0)
        self.metrics.scan_seconds.observe(scan.seconds)
        self.metrics.record_zones(
            (zone.name, res.name, float(res.available))
            for zone in scan.topology.zones
            for res in zone.resources
        )
        findings = frozenset((f.kind, f.detail) for f in scan.accounting.findings)
        self.metrics.record_findings(f.kind for f in scan.accounting.findings)
        for kind, detail in sorted(findings - self._findings):
            log.warning("input inconsistency (%s): %s", kind, detail)
        self._findings = findings
        self.status.degraded("kubelet-data", scan.inconsistent)
        self.status.degraded("kubelet-values", scan.implausible)
        self._record_machine(scan.machine_problem)
        if scan.zone_names_warning is not None and scan.zone_names_warning != self._zone_names_warning:
            log.warning("%s", scan.zone_names_warning)  # once per machine model, not per cycle
        self._zone_names_warning = scan.zone_names_warning

    def _no_machine(self, problem: str) -> None:
        """sysfs was never read (the agent started on an unreadable or impossible sysfs): nothing
        can be computed or published, so the agent is blind, not just degraded, and retries with
        the cycle's backoff rather than exiting, which would only crash-loop its pod."""
        self._machine_problem = problem
        self.metrics.sysfs_failing.set(1.0)
        self.status.problem("sysfs", f"{problem} (no machine model yet; retrying)")

    def _record_machine(self, problem: str | None) -> None:
        """A failed sysfs re-read: the last good model stands in; say so once, and when it ends."""
        if problem is not None and problem != self._machine_problem:
            log.warning("sysfs re-read failed: %s; publishing with the last good machine model", problem)
        elif problem is None and self._machine_problem is not None:
            log.info("sysfs readable again; the machine model is current")
        self._machine_problem = problem
        self.metrics.sysfs_failing.set(0.0 if problem is None else 1.0)
        self.status.problem("sysfs", None)
        detail = None if problem is None else f"{problem} (publishing with the last good machine model)"
        self.status.degraded("sysfs", detail)

    def _succeeded(self) -> None:
        tally = self.scanner.tally
        self.heap.after_cycle(tally.facts_computed if tally is not None else 0)
        self.metrics.cycles.inc(result="ok")
        if self._failure is not None:
            log.info("cycle succeeded again (after: %s)", self._failure)
            self._failure = None
        self.last_error = None
        self._retry.reset()
        self.status.succeeded(self._clock())

    def _fail(self, cause: str, error: BaseException | str, reasons: frozenset[str]) -> None:
        message = f"{cause}: {error}"
        self.metrics.cycles.inc(result="failed")
        self.metrics.cycle_errors.inc(cause=cause)
        self.status.failed(message)
        self.last_error = message
        delay = self._retry.next()
        if message != self._failure:
            log.warning("cycle failed: %s; retrying in %.1fs and with backoff after that", message, delay)
        else:
            log.debug("cycle failed again: %s; retrying in %.1fs", message, delay)
        self._failure = message
        now = self._clock()
        self._coalescer.add("retry", now, not_before=now + delay)
        for reason in reasons & _VERIFY:  # the retry still re-reads the stored object
            self._coalescer.add(reason, now, not_before=now + delay)
