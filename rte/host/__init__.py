"""What the agent reads from the machine itself, every path under an injected root.

* :mod:`rte.host.sysfs` and :mod:`rte.host.sysfsio`: NUMA nodes, CPUs (cores, threads), memory
  and hugepages per zone from a sysfs tree; :mod:`rte.host.pci`: PCI functions and their NUMA
  affinity (through udev on the real ``/sys``); :mod:`rte.host.machine` gathers them;
* :mod:`rte.host.kubelet_config` (and :mod:`rte.host.kubelet_config_files` for ``--config-dir``
  drop-ins): the kubelet settings a NUMA agent needs, with the kubelet's own defaults;
* :mod:`rte.host.kubelet_state`: the CPU and memory managers' checkpoint files.

Malformed or impossible input is one :class:`~rte.errors.InputError` naming the file and value.
No module here has a default path of its own: the agent's settings hold them all.
"""
