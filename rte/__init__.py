"""rte: per-NUMA-zone resource topology for Kubernetes nodes.

Two halves share one zone model and one fingerprint:

* the node agent (``rte.host``, ``rte.podres``, ``rte.agent``) reads the machine and the
  kubelet and publishes a ``NodeResourceTopology`` object;
* the consumer (``rte.consumer``) reads those objects and decides where a pod fits.

``rte.model`` is pure (no I/O, no gRPC, no Kubernetes client) so both halves can import it.
"""

__version__ = "0.1.0"
