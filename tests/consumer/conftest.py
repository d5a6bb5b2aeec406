"""Fixtures shared by the consumer's tests (Filter, Score, the reserve cache, the store).

None so far: NRTs, views and pods come from the builders in tests.helpers.consumer, and the fake
clock is ``clock`` from tests/conftest.py.
"""
