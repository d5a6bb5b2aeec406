"""The node agent, in rooms that call only downwards (docs/architecture.md):

* :mod:`.app` builds the parts from the settings, starts and stops them;
* :mod:`.publish` (publisher, heartbeat, printer) and :mod:`.watch` (files, pods, rejections),
  with :mod:`.health`, :mod:`.load` and :mod:`.logs` beside them;
* :mod:`.loop`, the agent loop;
* :mod:`.scanner`, one node reading (the kubelet through :mod:`rte.podres.reader`), with
  :mod:`.settings`, :mod:`.metrics`, :mod:`.status` and :mod:`.pacing`;
* :mod:`.compute`, the pure core: a reading in, a NodeTopology out.
"""
