"""Fixtures for the daemons' shared plumbing (rte.runtime); the fake clock is in tests/conftest.py."""
