"""Command implementations behind ``rte.cli``: each takes plain arguments and does one job."""
