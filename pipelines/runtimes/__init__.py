"""Runtimes that run a network's forward, one folder each behind the seam in base.py; registry.py lists them.

Kept light: importing a runtime's spec (for the config schema) must not import torch or the runtime itself.
"""
