"""The commands: their command lines (:mod:`.node`, :mod:`.scheduling`, :mod:`.simulate`,
:mod:`.views`, which load only click and light modules) and their implementations, each taking
plain arguments and doing one job. :mod:`rte.cli` only assembles the command lines into groups."""
