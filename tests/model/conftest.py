"""Fixtures shared by the tests of rte.model (pure: no files but tests/fixtures/fingerprint).

None so far: these tests build their inputs inline; fixture paths are in tests.helpers.paths.
"""
