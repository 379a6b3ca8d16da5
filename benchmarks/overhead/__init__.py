"""What detbench itself costs: the harness, its recorders, its start and its command line (README.md lists them)."""
