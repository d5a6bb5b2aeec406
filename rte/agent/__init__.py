"""The node agent: ``rte run`` (and, for one cycle without writing, ``rte dump``), in rooms that
call only downwards (docs/architecture.md; a layers contract in ``pyproject.toml``):

* :mod:`.app` builds the parts from :mod:`.settings`, starts and stops them;
* :mod:`.publish` writes the NRT only when it changed (publisher, merge patch, retries, the
  optional heartbeat Lease, the printer of ``rte dump``) and :mod:`.watch` turns files, pods and
  admission rejections into triggers, with :mod:`.health` (/healthz, /readyz, /metrics),
  :mod:`.load` and :mod:`.logs` beside them;
* :mod:`.loop`, the agent loop: one coalesced cycle at a time;
* :mod:`.scanner`, one node reading (sysfs through :mod:`rte.host`, the kubelet through
  :mod:`rte.podres.reader`), with :mod:`.settings`, :mod:`.metrics`, :mod:`.status` and
  :mod:`.pacing`;
* :mod:`.compute`, the pure core: a reading in, a NodeTopology out (per-zone accounting, the
  attributes, the pod-set fingerprint).

The agent never imports the consumer, NumPy or matplotlib (import-linter). User documentation:
docs/agent.md.
"""
