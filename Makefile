# `make demo` and `make test` create .venv when it is missing and install the project's dependencies into it.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: install demo test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet torch==2.14.1 torchvision==0.29.1
	$(VENV)/bin/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python benchmark.py --config configs/samples.yaml

test: $(STAMP)
	# Two pytest processes: one process running the whole suite died with SIGSEGV near its end in 4 of 5 runs
	# (never the same test twice in a row; every file alone passes). The cause is not found yet.
	$(VENV)/bin/python -m pytest $(wildcard tests/test_[a-o]*.py)
	$(VENV)/bin/python -m pytest $(wildcard tests/test_[p-z]*.py)

clean:
	rm -rf $(VENV) outputs
