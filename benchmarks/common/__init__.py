"""What benchmark scripts of every kind share: the order of a round, a detbench run's command line and figures,
the CPU they ran on, the model arguments of the in-process measurements."""
