"""Fixtures shared by the simulator's tests.

None so far: each test builds its hardware and pod mix from the simulator's own option languages.
"""
