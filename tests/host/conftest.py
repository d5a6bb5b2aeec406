"""Fixtures shared by the tests of rte.host (sysfs, PCI, kubelet config and checkpoint readers).

None so far: the real machines are listed in tests.helpers.paths (MACHINES, SYSFS_FIXTURES).
"""
