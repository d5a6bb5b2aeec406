from rte.cli import main

main(prog_name="rte")
