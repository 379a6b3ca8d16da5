"""Detection pipelines, one per detector family, behind the contract in contract.py; runtimes in runtimes/."""
