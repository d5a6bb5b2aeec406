from rte.cli import main

main()
