"""Fixtures shared by the command-line tests (rte dump, fit, extender through click or a process).

None so far: fixture paths are in tests.helpers.paths.
"""
