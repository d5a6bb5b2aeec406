"""Helpers the tests import (``from tests.helpers.<module> import ...``): builders, paths, the fake
clock, waiting. Test doubles that a person also runs by hand live in :mod:`rte.testing` instead."""
