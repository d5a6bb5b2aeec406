"""The scheduler side: where a pod fits NUMA-aligned, from published NRTs, in rooms that call only
downwards (docs/architecture.md; a layers contract in ``pyproject.toml``):

* :mod:`.api`: the library's front end, one pod against many nodes, Filter then Score
  (docs/library.md); :mod:`.cycle`: one scheduling cycle through a cache, as ``rte extender``
  and the simulator run it;
* :mod:`.kernel`: the decisions over many nodes at once, in NumPy columns;
* :mod:`.cache`: the caches between the NRTs and the decisions (Passthrough, the reserve cache,
  DiscardReserved), with fingerprint resync and freshness (:mod:`.agentpods`);
* :mod:`.filter` and :mod:`.kubelet_filter` (would the node's kubelet admit the pod, by the
  admission model of :mod:`rte.model.admission`, or what the reference plugin would say),
  :mod:`.score`, :mod:`.least_numa` and :mod:`.strategies` rank the nodes that pass;
* :mod:`.numaview`, :mod:`.requests` and :mod:`.store`: zone views, prepared pods, the NRTs as
  watched; :mod:`.config`: the consumer's settings.

Pure over the model: it never imports the agent, gRPC, sysfs or a Kubernetes client
(import-linter); the extender (:mod:`rte.extender`) and the CLI do the I/O. User documentation:
docs/consumer.md.
"""
