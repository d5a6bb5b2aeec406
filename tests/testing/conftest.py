"""Fixtures shared by the tests of the doubles in rte.testing (apiserver, fake kubelet, laptop helpers).

The apiserver double's fixtures come from its pytest plugin, registered in tests/conftest.py.
"""
