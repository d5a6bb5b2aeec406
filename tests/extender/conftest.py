"""Fixtures shared by the extender's tests (HTTP wire format, and the app against the apiserver double).

None so far: wire-JSON builders and the HTTP client are in tests.helpers.extender; the apiserver
double and ``objects`` come from tests/conftest.py.
"""
