"""The scheduler side: where a pod fits NUMA-aligned, from published NRTs.

* :mod:`rte.consumer.api`: the library's front end, one pod against many nodes, Filter then
  Score (docs/library.md);
* :mod:`rte.consumer.filter` (with :mod:`rte.consumer.kubelet_filter`): would the node's kubelet
  admit the pod, by the admission model of :mod:`rte.model.admission`, or what the reference
  plugin would say (``--compat reference``); :mod:`rte.consumer.score` and
  :mod:`rte.consumer.strategies` rank the nodes that pass;
* :mod:`rte.consumer.kernel`: the same decisions over many nodes at once, in NumPy columns;
* :mod:`rte.consumer.store` and :mod:`rte.consumer.cache`: the NRTs as watched, and the caches
  between them and the decisions (Passthrough, the reserve cache, DiscardReserved), with
  fingerprint resync and Lease freshness;
* :mod:`rte.consumer.cycle`: one scheduling cycle through a cache, as ``rte extender`` and the
  simulator run it.

Pure over the model: it never imports the agent, gRPC, sysfs or a Kubernetes client
(import-linter, ``pyproject.toml``); the extender (:mod:`rte.extender`) and the CLI do the I/O.
User documentation: docs/consumer.md.
"""
