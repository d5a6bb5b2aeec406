"""The node agent, wired: every piece ``rte run`` runs, built from the settings.

:class:`AgentApp` builds the pieces (kubelet reader, scanner, loop, and with publishing the
apiserver client, publisher, pod watch and heartbeat), then either runs one cycle
(:meth:`~AgentApp.run_once`, ``--once``) or starts the daemon's threads (:meth:`~AgentApp.start`:
file watches, probes and metrics, pod watch, heartbeat, the loop) and stops them again
(:meth:`~AgentApp.stop`, within ``shutdown_timeout``), as :class:`~rte.extender.app.ExtenderApp`
does for the extender. :mod:`rte.commands.run` only loads the settings and waits for a signal.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from rte import __version__
from rte.agent.compute.podset import PodGlob
from rte.agent.compute.reading import PublishingRules
from rte.agent.health import HealthServer
from rte.agent.loop import Agent, PodSnapshots, Publishing, interruptible_sleep
from rte.agent.metrics import AgentMetrics
from rte.agent.pacing import Backoff
from rte.agent.publish.heartbeat import HeartbeatRunner
from rte.agent.publish.printer import printer
from rte.agent.scanner import CheckpointFiles, KubeletConfigCache, Scanner, ZoneAttributes
from rte.agent.settings import AgentSettings, parse_address
from rte.agent.status import AgentStatus
from rte.agent.watch.files import FileWatcher, WatchSpec
from rte.agent.watch.rejections import Rejection
from rte.errors import RteError, UnavailableError
from rte.host.kubelet_state import CPU_MANAGER_STATE, DRA_MANAGER_STATE, MEMORY_MANAGER_STATE
from rte.host.machine import Machine
from rte.host.sysfs import read_machine
from rte.podres.reader import open_reader

log = logging.getLogger("rte.agent")

DEVICE_PLUGINS_DIR = "device-plugins"
AGENT_USER_AGENT = f"rte-agent/{__version__}"
CLOSE_TIMEOUT = 0.5
"""Seconds the clients get to close before the process exits anyway (see :func:`close_within`)."""


class CycleFailed(RteError):
    """``rte run --once``: the one cycle failed."""


def _zone_load(settings: AgentSettings) -> ZoneAttributes | None:
    if not settings.zone_load:
        return None
    from rte.agent.load import ZoneLoadSampler

    samplers: dict[int, ZoneLoadSampler] = {}

    def sample(machine: Machine) -> Mapping[int, Mapping[str, str]]:
        # One sampler per machine read: a re-read (hotplug) starts a fresh baseline.
        sampler = samplers.get(id(machine))
        if sampler is None:
            samplers.clear()
            sampler = samplers[id(machine)] = ZoneLoadSampler(
                machine, settings.sysfs_root, band=settings.zone_load_band
            )
        return sampler.sample()

    return sample


def _watch_specs(settings: AgentSettings) -> list[WatchSpec]:
    specs = []
    if settings.notify_file is not None:
        specs.append(WatchSpec(settings.notify_file.parent, frozenset({settings.notify_file.name}), "notify"))
    if settings.watch_kubelet_state:
        states = frozenset({CPU_MANAGER_STATE, MEMORY_MANAGER_STATE, DRA_MANAGER_STATE})
        specs.append(WatchSpec(settings.kubelet_root, states, "kubelet-state"))
        # Plugin sockets come and go (registration) and the checkpoint changes on allocation.
        specs.append(WatchSpec(settings.kubelet_root / DEVICE_PLUGINS_DIR, None, "device-plugins"))
    return specs


def _ensure_notify_file(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError as e:
        log.warning("cannot create notify file %s (%s); watching for it anyway", path, e.strerror or e)


def close_within(timeout: float, closers: list[Callable[[], None]]) -> None:
    """Run the closers in a helper thread and give up after ``timeout``: closing a client
    mid-request can block (an HTTP stream read holds the socket's lock); the process must still
    exit on time, and daemon threads do not hold the interpreter back."""

    def close_all() -> None:
        for close in closers:
            try:
                close()
            except Exception:
                log.debug("error while closing", exc_info=True)

    thread = threading.Thread(target=close_all, name="rte-close", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        log.warning("clients did not close within %.1fs; exiting anyway", timeout)


def _api_window(settings: AgentSettings) -> float | None:
    """How long the apiserver may stay silent before the agent is unready (None: no apiserver).

    With the heartbeat on, renewals ask every quarter of ``lease_duration``: a whole Lease
    duration without an answer is an outage, not a blip, and it is also when the agent's Lease
    runs out. Without it, the resync's read of the stored NRT is the regular request.
    """
    if not settings.publish:
        return None
    if settings.lease_duration > 0:
        return settings.lease_duration
    return settings.ready_factor * settings.resync_interval


class _Cluster:
    """The apiserver side: publisher, pod watch and heartbeat (absent with --no-publish)."""

    def __init__(
        self,
        settings: AgentSettings,
        stop: threading.Event,
        on_pods: Callable[[], None],
        on_rejected: Callable[[Rejection], None],
        api_client: Any,
        on_nrt_changed: Callable[[str], None] = lambda what: None,
    ) -> None:
        from rte.agent.publish.heartbeat import Heartbeat
        from rte.agent.publish.publisher import Publisher
        from rte.agent.watch.nrtwatch import OwnNrtWatch
        from rte.agent.watch.podwatch import NodePodWatch
        from rte.runtime.kubeclient import AGENT_SOURCES, load_api_client

        s = settings
        self.api = api_client or load_api_client(
            str(s.kubeconfig) if s.kubeconfig is not None else None,
            # A DaemonSet: in-cluster in a pod; elsewhere --kubeconfig or $KUBECONFIG, as every
            # command honours it, but never a ~/.kube/config found by chance.
            sources=AGENT_SOURCES,
            qps=s.api_qps,
            timeout=s.request_timeout,
            user_agent=AGENT_USER_AGENT,
            # JSON requests only, no pydantic nor kube_config: 14.6 MiB less (docs/performance.md).
            generated=False,
        )
        publisher = Publisher(
            self.api,
            s.node_name,
            owner_reference=s.owner_reference,
            field_manager=s.field_manager,
            sleep=interruptible_sleep(stop),
        )
        self.publisher: Publishing = publisher
        self.nrt_watch = (
            OwnNrtWatch(self.api, s.node_name, publisher, on_nrt_changed) if s.nrt_watch else None
        )
        self.pod_watch = (
            NodePodWatch(
                self.api, s.node_name, on_change=on_pods, on_rejected=on_rejected, as_node=s.pod_watch_as_node
            )
            if s.pod_watch
            else None
        )
        self.heartbeat = (
            Heartbeat(self.api, s.node_name, s.lease_namespace, max(1, round(s.lease_duration)))
            if s.lease_duration > 0
            else None
        )

    @property
    def pods(self) -> PodSnapshots | None:
        return self.pod_watch

    def start_watches(self) -> None:
        if self.pod_watch is not None:
            self.pod_watch.start()
        if self.nrt_watch is not None:
            self.nrt_watch.start()

    def stop_pod_watch(self) -> None:
        """Stop the watches from helper threads (closing a stream can block a while)."""
        if self.pod_watch is not None:
            watch, self.pod_watch = self.pod_watch, None
            threading.Thread(
                target=watch.stop, kwargs={"timeout": 1.0}, name="rte-stop-watch", daemon=True
            ).start()
        if self.nrt_watch is not None:
            nrt, self.nrt_watch = self.nrt_watch, None
            threading.Thread(
                target=nrt.stop, kwargs={"timeout": 1.0}, name="rte-stop-nrt-watch", daemon=True
            ).start()

    def close(self) -> None:
        self.stop_pod_watch()
        self.api.close()


class AgentApp:
    """Everything ``rte run`` runs. Nothing runs until :meth:`start` or :meth:`run_once`.

    ``api_client`` replaces the one built from the settings (tests pass one for the apiserver
    double). Without publishing, each new object goes to ``out`` as ``output`` (yaml or json).
    """

    def __init__(
        self,
        settings: AgentSettings,
        *,
        out: TextIO | None = None,
        output: str = "yaml",
        api_client: Any = None,
    ) -> None:
        import sys

        self.settings = settings
        self.stop_event = threading.Event()
        self.metrics = AgentMetrics(settings.node_name, __version__)
        self.status = AgentStatus(
            ready_window=settings.ready_factor * settings.resync_interval,
            stall_timeout=settings.stall_timeout,
            api_window=_api_window(settings),
            # A List or cycle running longer than a Lease cannot vouch for anything (issue #26
            # item 4); without the heartbeat, the default Lease duration still bounds it.
            busy_limit=settings.lease_duration or 40.0,
        )
        self.reader = open_reader(
            settings.podresources,
            timeout=settings.kubelet_timeout,
            qps=settings.kubelet_qps,
            burst=settings.kubelet_burst,
        )
        scanner = Scanner(
            node_name=settings.node_name,
            reader=self.reader,
            max_listed_pods=settings.max_listed_pods,
            machine_loader=lambda: read_machine(settings.sysfs_root, pci=False),
            kubelet_config=KubeletConfigCache(settings.kubelet_config, settings.kubelet_config_dir),
            rules=PublishingRules(
                settings.fingerprint_method,
                settings.informer_mode,
                tuple(PodGlob.parse(g) for g in settings.pod_exclude),
                settings.numa_placement,
                settings.zone_names,
            ),
            checkpoints=CheckpointFiles(Path(settings.kubelet_root)),
            zone_attributes=_zone_load(settings),
            on_kubelet_error=lambda method, kind: self.metrics.podresources_errors.inc(
                method=method, kind=kind
            ),
        )
        self.cluster: _Cluster | None = None
        try:
            if settings.publish:
                self.cluster = _Cluster(
                    settings,
                    self.stop_event,
                    self._pods_changed,
                    self._pod_rejected,
                    api_client,
                    on_nrt_changed=self._nrt_changed,
                )
        except BaseException:
            self.reader.close()
            raise
        self.agent = Agent(
            settings,
            scanner,
            metrics=self.metrics,
            status=self.status,
            publisher=self.cluster.publisher if self.cluster else None,
            pods=self.cluster.pods if self.cluster else None,
            sink=None if settings.publish else printer(output, out or sys.stdout),
            stop_event=self.stop_event,
        )
        if settings.kubelet_config is None:
            # Issue #28: consumers (scheduler-plugins, KAI) read an NRT without a policy as
            # policy none, so the node would get pods it may refuse: say so once, and in the
            # rte_agent_topology_policy_known metric (0); `rte top` marks such NRTs NoPolicy.
            log.warning(
                "no kubelet config given (kubelet_config): the Topology Manager policy is unknown and"
                " not published; schedulers will treat this node as policy none and filter nothing"
                " on it (rte_agent_topology_policy_known 0)"
            )
        self.health: HealthServer | None = None
        self.watcher: FileWatcher | None = None
        self.heartbeat: HeartbeatRunner | None = None
        self._loop: threading.Thread | None = None
        self._closed = False

    def _pods_changed(self) -> None:
        agent: Agent | None = getattr(self, "agent", None)  # events may come before the loop exists
        if agent is not None:
            agent.trigger("pods")

    def _nrt_changed(self, what: str) -> None:
        """Someone else deleted or edited our NRT (:mod:`rte.agent.watch.nrtwatch`): repair it now."""
        self.metrics.nrt_repairs.inc(what=what)
        agent: Agent | None = getattr(self, "agent", None)
        if agent is not None:
            agent.trigger("nrt-changed")

    def _pod_rejected(self, rejection: Rejection) -> None:
        """The kubelet refused a pod over alignment: count it, say so, and refresh the NRT now."""
        self.metrics.topology_affinity_errors.inc(reason=rejection.reason)
        log.warning(
            "kubelet rejected pod %s with %s (%s); the scheduler's view of this node was wrong:"
            " refreshing the NRT now",
            rejection.pod,
            rejection.reason,
            rejection.message,
        )
        agent: Agent | None = getattr(self, "agent", None)
        if agent is not None:
            agent.trigger("admission-error")

    # --- --once ------------------------------------------------------------------------

    def run_once(self) -> None:
        """One cycle (after the pod watch synced, when there is one).

        The node is read once before the cycle, so that bad input (sysfs, the kubelet config, the
        kubelet's data) ends the command as its :class:`~rte.errors.InputError`, exit status 2
        with nothing published, as in ``rte dump``, not as a failed cycle that speaks of retrying.
        A kubelet that does not answer within ``kubelet_timeout``, or a failed cycle, is
        :class:`CycleFailed`.
        """
        s = self.settings
        if self.cluster is not None and self.cluster.pod_watch is not None:
            self.cluster.pod_watch.start()
            if not self.cluster.pod_watch.wait_synced(s.request_timeout):
                log.warning("pod watch not synced in time: the fingerprint follows the kubelet's List")
        # A kubelet that is just starting gets kubelet_timeout to answer, as a daemon would wait.
        deadline = time.monotonic() + s.kubelet_timeout
        while True:
            try:
                self.agent.scanner.read(fresh_list=True)
                break
            except UnavailableError as e:
                if time.monotonic() >= deadline:
                    raise CycleFailed(f"kubelet: {e}") from e
                time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
        while not self.agent.run_once():
            error = self.agent.last_error or "cycle failed"
            if not error.startswith("kubelet:") or time.monotonic() >= deadline:
                raise CycleFailed(error)
            time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
        if self.agent.output_closed:
            raise BrokenPipeError("the reader of the output went away")
        if self.agent.last_published is not None:
            log.info("NRT %s is up to date", s.node_name)

    # --- the daemon --------------------------------------------------------------------

    def start(self) -> AgentApp:
        """Start the daemon's threads and return; the loop publishes at once."""
        s = self.settings
        if s.notify_file is not None:
            _ensure_notify_file(s.notify_file)
        self.watcher = FileWatcher(_watch_specs(s), self.agent.trigger)
        if s.http_address:
            host, port = parse_address(s.http_address)
            self.health = HealthServer(host, port, self.status, self.metrics.registry).start()
        if self.cluster is not None:
            self.cluster.start_watches()
            if self.cluster.heartbeat is not None:
                self.heartbeat = HeartbeatRunner(
                    self.cluster.heartbeat,
                    s.lease_duration / 4,
                    metrics=self.metrics,
                    backoff=Backoff(s.retry_base, s.retry_cap),
                    stop_event=self.stop_event,
                    status=self.status,
                )
                self.heartbeat.start()
        self.watcher.start()
        self._loop = threading.Thread(target=self._run_loop, name="rte-loop", daemon=True)
        self._loop.start()
        log.info(
            "agent started",
            extra={
                "node": s.node_name,
                "publish": s.publish,
                "podresources": s.podresources,
                "file_watch": self.watcher.mode,
                "http": f"{self.health.port}" if self.health else "off",
            },
        )
        return self

    def _run_loop(self) -> None:
        """The loop thread: :meth:`Agent.run`, restarted after an unexpected error (never dies)."""
        while not self.agent.stopping:
            try:
                self.agent.run()
            except Exception:
                log.exception("agent loop failed unexpectedly; restarting it in 1s")
                self.stop_event.wait(1.0)

    def stop(self) -> None:
        """Stop what runs, all within ``shutdown_timeout``, and close the clients."""
        started = self._loop is not None
        self.agent.stop()
        deadline = time.monotonic() + self.settings.shutdown_timeout

        def left() -> float:
            return max(0.1, deadline - time.monotonic())

        if self.cluster is not None:
            self.cluster.stop_pod_watch()  # in the background: it does not wait for the loop
        if self.watcher is not None:
            self.watcher.stop(timeout=left())
        if self.health is not None:
            self.health.stop(timeout=min(2.0, left()))
        if self._loop is not None:
            self._loop.join(left())
            if self._loop.is_alive():
                log.warning(
                    "the current cycle did not finish within %.1fs; abandoned", self.settings.shutdown_timeout
                )
        if self.heartbeat is not None:
            self.heartbeat.join(left())
        self.close()
        if started:
            log.info("agent stopped")

    def close(self) -> None:
        """Close the kubelet and apiserver clients (at most :data:`CLOSE_TIMEOUT` seconds)."""
        if self._closed:
            return
        self._closed = True
        closers: list[Callable[[], None]] = [self.reader.close]
        if self.cluster is not None:
            closers.insert(0, self.cluster.close)
        close_within(CLOSE_TIMEOUT, closers)

    def __enter__(self) -> AgentApp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
