"""``rte run``: the node agent. Builds the pieces from the settings, runs them, stops them.

Modes:

* default: the daemon. Publishes at start, then keeps the NRT current (see
  :mod:`rte.agent.loop`) until SIGTERM or SIGINT, then exits 0 within ``shutdown_timeout``.
* ``--once``: one cycle; exit status 1 (with the reason on stderr) when it failed.
* ``--no-publish``: no cluster at all; each new object is printed on stdout instead (YAML
  documents, or JSON lines with ``-o json``). Combines with ``--once``.
* ``--dump-config``: print the effective settings as YAML and exit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from rte import __version__
from rte.agent.health import HealthServer
from rte.agent.kubelet import KubeletReader, open_reader
from rte.agent.logs import configure_logging
from rte.agent.loop import Agent, HeartbeatRunner, PodSnapshots, Publishing, interruptible_sleep
from rte.agent.metrics import AgentMetrics
from rte.agent.pacing import Backoff
from rte.agent.podset import PodGlob
from rte.agent.reading import PublishingRules
from rte.agent.scanner import CheckpointFiles, KubeletConfigCache, Scanner, ZoneAttributes
from rte.agent.status import AgentStatus
from rte.agent.watch import FileWatcher, WatchSpec
from rte.errors import RteError
from rte.host.kubelet_state import CPU_MANAGER_STATE, DRA_MANAGER_STATE, MEMORY_MANAGER_STATE
from rte.host.machine import Machine
from rte.host.sysfs import read_machine
from rte.model.nrt import to_nrt
from rte.model.topology import NodeTopology
from rte.settings import Settings
from rte.settings_loader import dump_settings, load_settings, parse_address

log = logging.getLogger("rte.agent")

DEVICE_PLUGINS_DIR = "device-plugins"


class CycleFailed(RteError):
    """``rte run --once``: the one cycle failed."""


def printer(output: str, out: TextIO) -> Callable[[NodeTopology], None]:
    """The ``--no-publish`` sink: YAML documents separated by ``---``, or one JSON object per line."""
    count = 0

    def sink(topology: NodeTopology) -> None:
        nonlocal count
        obj = to_nrt(topology)
        if output == "json":
            out.write(json.dumps(obj) + "\n")
        else:
            import yaml

            if count:
                out.write("---\n")
            yaml.safe_dump(obj, out, sort_keys=False, default_flow_style=False)
        out.flush()
        count += 1

    return sink


def _zone_load(settings: Settings) -> ZoneAttributes | None:
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


def _watch_specs(settings: Settings) -> list[WatchSpec]:
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


class _Cluster:
    """The apiserver side: publisher, pod watch and heartbeat (absent with --no-publish)."""

    def __init__(self, settings: Settings, stop: threading.Event, on_pods: Callable[[], None]) -> None:
        from rte.agent.heartbeat import Heartbeat
        from rte.agent.kube import load_api_client
        from rte.agent.podwatch import NodePodWatch
        from rte.agent.publisher import Publisher

        s = settings
        kubeconfig = str(s.kubeconfig) if s.kubeconfig is not None else None
        self.api = load_api_client(kubeconfig, qps=s.api_qps, timeout=s.api_timeout)
        self.publisher: Publishing = Publisher(
            self.api,
            s.node_name,
            owner_reference=s.owner_reference,
            field_manager=s.field_manager,
            sleep=interruptible_sleep(stop),
        )
        self.pod_watch = NodePodWatch(self.api, s.node_name, on_change=on_pods) if s.pod_watch else None
        self.heartbeat = (
            Heartbeat(self.api, s.node_name, s.lease_namespace, max(1, round(s.lease_duration)))
            if s.lease_duration > 0
            else None
        )

    @property
    def pods(self) -> PodSnapshots | None:
        return self.pod_watch

    def stop_pod_watch(self) -> None:
        """Stop the pod watch from a helper thread (closing its stream can block a while)."""
        if self.pod_watch is not None:
            watch, self.pod_watch = self.pod_watch, None
            threading.Thread(
                target=watch.stop, kwargs={"timeout": 1.0}, name="rte-stop-watch", daemon=True
            ).start()

    def close(self) -> None:
        self.stop_pod_watch()
        self.api.close()


def build_agent(
    settings: Settings,
    *,
    out: TextIO,
    output: str,
    stop: threading.Event,
) -> tuple[Agent, KubeletReader, _Cluster | None]:
    """Every piece of the agent, wired, nothing started."""
    metrics = AgentMetrics(settings.node_name, __version__)
    status = AgentStatus(
        ready_window=settings.ready_factor * settings.resync_interval,
        stall_timeout=settings.stall_timeout,
    )
    reader = open_reader(
        settings.podresources,
        timeout=settings.kubelet_timeout,
        qps=settings.kubelet_qps,
        burst=settings.kubelet_burst,
    )
    scanner = Scanner(
        node_name=settings.node_name,
        reader=reader,
        machine_loader=lambda: read_machine(settings.sysfs_root, pci=False),
        kubelet_config=KubeletConfigCache(settings.kubelet_config, settings.kubelet_config_dir),
        rules=PublishingRules(
            settings.fingerprint_method,
            settings.informer_mode,
            tuple(PodGlob.parse(g) for g in settings.pod_exclude),
        ),
        checkpoints=CheckpointFiles(Path(settings.kubelet_root)),
        zone_attributes=_zone_load(settings),
        on_kubelet_error=lambda method, kind: metrics.podresources_errors.inc(method=method, kind=kind),
    )
    agent_ref: list[Agent] = []
    cluster = None
    if settings.publish:
        cluster = _Cluster(settings, stop, lambda: agent_ref[0].trigger("pods") if agent_ref else None)
    agent = Agent(
        settings,
        scanner,
        metrics=metrics,
        status=status,
        publisher=cluster.publisher if cluster else None,
        pods=cluster.pods if cluster else None,
        sink=None if settings.publish else printer(output, out),
        stop_event=stop,
    )
    agent_ref.append(agent)
    if settings.kubelet_config is None:
        log.warning("no kubelet config given (kubelet_config): Topology Manager attributes are not published")
    return agent, reader, cluster


def run(
    *,
    config_file: str | None,
    flags: Mapping[str, Any],
    once: bool = False,
    dump_config: bool = False,
    output: str = "yaml",
    out: TextIO | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """The ``rte run`` command; raises :class:`RteError` subclasses for the CLI to report."""
    out = out or sys.stdout
    settings = load_settings(config_file=config_file, env=env, flags=flags)
    if dump_config:
        out.write(dump_settings(settings))
        return
    configure_logging(settings.log_level, settings.log_format)
    stop = threading.Event()
    agent, reader, cluster = build_agent(settings, out=out, output=output, stop=stop)
    closers: list[Callable[[], None]] = [reader.close]
    if cluster is not None:
        closers.insert(0, cluster.close)
    try:
        if once:
            _run_once(agent, cluster, settings)
        else:
            _run_daemon(agent, cluster, settings, stop)
    finally:
        _close_within(0.5, closers)


def _close_within(timeout: float, closers: list[Callable[[], None]]) -> None:
    """Run the closers in a helper thread and give up after ``timeout``.

    Closing a client mid-request can block (an HTTP stream read holds the socket's lock); the
    process must still exit on time, and daemon threads do not hold the interpreter back.
    """

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


def _run_once(agent: Agent, cluster: _Cluster | None, settings: Settings) -> None:
    if cluster is not None and cluster.pod_watch is not None:
        cluster.pod_watch.start()
        if not cluster.pod_watch.wait_synced(settings.api_timeout):
            log.warning("pod watch not synced in time: the fingerprint follows the kubelet's List")
    # A kubelet that is just starting gets kubelet_timeout to answer, as a daemon would wait.
    deadline = time.monotonic() + settings.kubelet_timeout
    while not agent.run_once():
        error = agent.last_error or "cycle failed"
        if not error.startswith("kubelet:") or time.monotonic() >= deadline:
            raise CycleFailed(error)
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
    if agent.last_published is not None:
        log.info("NRT %s is up to date", settings.node_name)


class _Signals:
    """SIGTERM/SIGINT noted without taking any lock in the handler.

    A handler runs in the main thread between two bytecodes, possibly while that thread holds
    a lock (inside ``Event.wait`` or a log write); setting an Event or logging from it can then
    deadlock. So the handler only records the signal and writes a byte to a pipe, and the main
    thread, waiting in ``select`` on that pipe, does the rest.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        with contextlib.suppress(OSError):
            os.write(self._write, b"x")

    def wait(self, stop: threading.Event) -> None:
        """Until a signal arrives or ``stop`` is set by someone else."""
        while self.received is None and not stop.is_set():
            select.select([self._read], [], [], 1.0)


def _run_daemon(agent: Agent, cluster: _Cluster | None, settings: Settings, stop: threading.Event) -> None:
    signals = _Signals()

    if settings.notify_file is not None:
        _ensure_notify_file(settings.notify_file)
    watcher = FileWatcher(_watch_specs(settings), agent.trigger)
    health = None
    if settings.http_address:
        host, port = parse_address(settings.http_address)
        health = HealthServer(host, port, agent.status, agent.metrics.registry).start()
    heartbeat = None
    if cluster is not None:
        if cluster.pod_watch is not None:
            cluster.pod_watch.start()
        if cluster.heartbeat is not None:
            heartbeat = HeartbeatRunner(
                cluster.heartbeat,
                settings.lease_duration / 4,
                metrics=agent.metrics,
                backoff=Backoff(settings.retry_base, settings.retry_cap),
                stop_event=stop,
            )
            heartbeat.start()
    watcher.start()
    loop = threading.Thread(target=_guarded(agent), name="rte-loop", daemon=True)
    loop.start()
    log.info(
        "agent started",
        extra={
            "node": settings.node_name,
            "publish": settings.publish,
            "podresources": settings.podresources,
            "file_watch": watcher.mode,
            "http": f"{health and health.port}" if health else "off",
        },
    )
    signals.wait(stop)
    if signals.received is not None:
        log.info("received %s: shutting down", signal.Signals(signals.received).name)
    agent.stop()
    # Everything below shares one budget, so SIGTERM to exit takes at most shutdown_timeout.
    deadline = time.monotonic() + settings.shutdown_timeout

    def left() -> float:
        return max(0.1, deadline - time.monotonic())

    if cluster is not None:
        cluster.stop_pod_watch()  # in the background: it does not wait for the loop
    watcher.stop(timeout=left())
    if health is not None:
        health.stop()
    loop.join(left())
    if loop.is_alive():
        log.warning("the current cycle did not finish within %.1fs; abandoned", settings.shutdown_timeout)
    if heartbeat is not None:
        heartbeat.join(left())
    log.info("agent stopped")


def _guarded(agent: Agent) -> Callable[[], None]:
    """The loop thread: :meth:`Agent.run`, restarted after an unexpected error (never dies)."""

    def run() -> None:
        while not agent.stopping:
            try:
                agent.run()
            except Exception:
                log.exception("agent loop failed unexpectedly; restarting it in 1s")
                agent.stop_event.wait(1.0)

    return run
