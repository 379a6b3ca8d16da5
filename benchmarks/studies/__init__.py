"""Accuracy studies: what the verdicts, int8 and tune answer, checked against labels and the exhaustive sweep
(README.md lists them)."""
