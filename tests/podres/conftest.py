"""Fixtures shared by the tests of rte.podres (the podresources client, files and conversion).

The fake kubelet serving the R640 scenario is ``kubelet``, from tests/conftest.py.
"""
