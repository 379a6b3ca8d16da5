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

# Byte-compiled first: the suite starts a few hundred processes, and where PYTHONDONTWRITEBYTECODE is set each one
# would compile the project's modules again. Two workers, a test file each at a time (so a module's fixtures are
# built once): most of a test's time is a process starting, a server answering or Python between small forwards,
# which the other worker fills. TEST_WORKERS=0 runs in this process, one test after another.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(VENV)/bin/python -m compileall -q -j 0 benchmark.py benchmarks pipelines models utils datasets tests > /dev/null
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile

clean:
	rm -rf $(VENV) outputs
