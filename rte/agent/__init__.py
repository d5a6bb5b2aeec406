"""The node agent: ``rte run`` (and, for one cycle without writing, ``rte dump``).

What one cycle does, and where:

* **read** the node (:mod:`rte.agent.scanner`, :mod:`rte.agent.reading`): sysfs through
  :mod:`rte.host`, the kubelet's podresources through :mod:`rte.podres`, its config and
  checkpoint files; :mod:`rte.agent.kubelet` opens the endpoint;
* **compute** the object (:mod:`rte.agent.compute`, a pure pipeline): per-zone accounting
  (:mod:`rte.agent.accounting` and its cpu/memory/device parts), the attributes and the pod-set
  fingerprint (:mod:`rte.agent.builder`, :mod:`rte.agent.podset`);
* **publish** it only when it changed (:mod:`rte.agent.publisher`, :mod:`rte.agent.nrtpatch`,
  paced by :mod:`rte.agent.pacing`), and renew the node's Lease (:mod:`rte.agent.heartbeat`).

:mod:`rte.agent.loop` turns triggers (polling, inotify :mod:`rte.agent.watch`, the pod watch
:mod:`rte.agent.podwatch`, admission rejections) into one coalesced cycle at a time;
:mod:`rte.agent.app` wires it all from :mod:`rte.agent.settings`; :mod:`rte.agent.health` and
:mod:`rte.agent.metrics` serve /healthz, /readyz and /metrics. The agent never imports the
consumer, NumPy or matplotlib (import-linter, ``pyproject.toml``). User documentation:
docs/agent.md.
"""
