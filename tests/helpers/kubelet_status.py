"""Doubles of the two Kubernetes components that write an agent pod's ``Ready`` condition.

No kubelet runs here, so these stand in for the parts of it, and of kube-controller-manager, that
turn an agent's ``/readyz`` into what a consumer watches (rte.consumer.agentpods):

* :class:`ReadinessProber` - the kubelet's prober and status manager
  (``pkg/kubelet/prober/worker.go``, ``pkg/kubelet/status/status_manager.go``): a probe every
  ``period`` with a ``timeout``; ``failure_threshold`` failures in a row make the container not
  ready, one success ready again; a container that exited is not ready at once (the PLEG relist).
  The pod's status is written only when the condition flips.
* :class:`NodeLifecycle` - the node lifecycle controller
  (``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, ``MarkPodsNotReady``): once the
  kubelet has been silent for ``grace`` (``--node-monitor-grace-period``), checked every
  ``monitor_period``, every pod of the node is marked not ready.

Both write through the apiserver double's storage, so the watch events are the ones a consumer
would receive.
"""

from __future__ import annotations

import copy
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime

from rte.testing.apiserver import FakeApiServer

PODS = "pods"


def rfc3339(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodStatusWriter:
    """Sets a pod's ``Ready`` condition, only when it changes (as the status manager does)."""

    def __init__(self, api: FakeApiServer, name: str, namespace: str) -> None:
        self.api, self.name, self.namespace = api, name, namespace
        self.ready: bool | None = None
        self.flips: list[tuple[float, bool]] = []

    def set_ready(self, ready: bool) -> None:
        if ready == self.ready:
            return
        pod = self.api.get_object(PODS, self.name, self.namespace)
        if pod is None:
            return
        pod = copy.deepcopy(pod)
        now = time.time()
        condition = {"type": "Ready", "status": str(ready), "lastTransitionTime": rfc3339(now)}
        status = pod.setdefault("status", {})
        others = [c for c in status.get("conditions", []) if c.get("type") != "Ready"]
        status["conditions"] = [*others, condition]
        self.api.storage.update(PODS, pod)
        self.ready = ready
        self.flips.append((now, ready))


class ReadinessProber:
    """Probes ``url()`` + ``/readyz`` in a thread until :meth:`stop` (the kubelet going away)."""

    def __init__(
        self,
        writer: PodStatusWriter,
        url: Callable[[], str],
        alive: Callable[[], bool],
        *,
        period: float,
        timeout: float,
        failure_threshold: int,
    ) -> None:
        self.writer, self.url, self.alive = writer, url, alive
        self.period, self.timeout, self.failure_threshold = period, timeout, failure_threshold
        self.last_beat = time.monotonic()
        """When this kubelet last reported (what the node lifecycle controller watches)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet-prober", daemon=True)

    def start(self) -> ReadinessProber:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _probe(self) -> bool:
        try:
            with urllib.request.urlopen(self.url() + "/readyz", timeout=self.timeout) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            self.last_beat = time.monotonic()
            if not self.alive():
                self.writer.set_ready(False)  # the container exited: no probe needed
                failures = self.failure_threshold
            elif self._probe():
                failures = 0
                self.writer.set_ready(True)
            else:
                failures += 1
                if failures >= self.failure_threshold:
                    self.writer.set_ready(False)
            self._stop.wait(self.period)


class NodeLifecycle:
    """Marks the node's pods not ready once its kubelet (``prober``) has been silent for ``grace``."""

    def __init__(
        self, prober: ReadinessProber, writers: list[PodStatusWriter], *, grace: float, monitor_period: float
    ) -> None:
        self.prober, self.writers = prober, writers
        self.grace, self.monitor_period = grace, monitor_period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="node-lifecycle", daemon=True)

    def start(self) -> NodeLifecycle:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.monitor_period):
            if time.monotonic() - self.prober.last_beat > self.grace:
                for writer in self.writers:
                    writer.set_ready(False)
