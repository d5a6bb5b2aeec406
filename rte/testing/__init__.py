"""Test doubles for rte, and for trying it on a laptop without a cluster.

Nothing else in :mod:`rte` imports this package (a test checks), so ``rte run`` and ``rte dump``
never load it. Each module runs as a program too (``python -m rte.testing.<module> --help``):

- :mod:`rte.testing.fake_kubelet`: the kubelet's podresources API, real gRPC on a unix socket,
  serving a scenario directory.
- :mod:`rte.testing.apiserver`: an in-memory kube-apiserver with Kubernetes REST semantics over
  HTTP (needs ``jsonschema``, from the ``test`` extra); pytest fixtures in
  :mod:`rte.testing.apiserver.pytest_plugin`.
- :mod:`rte.testing.scenarios`: synthetic podresources scenarios (sparse NUMA ids, many pods).
- :mod:`rte.testing.fake_sysfs`: a sysfs tree matching a synthetic scenario.
- :mod:`rte.testing.local_doubles` and :mod:`rte.testing.local_pods`: the fake kubelet and the
  apiserver double in one process for ``hack/run-local.sh``, and the commands that change what
  that kubelet serves.
"""
