# The two set-up commands of the README: `make demo` (the main job on the embedded default, the
# local lab) and `make test` (ruff, mypy, ansible-lint, every test tier this machine can run).
# Both create .venv and install gpuctl with its dev tools first, so they work on a fresh machine.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-slow lint typecheck unit bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# A 3-node local lab (needs root): up, configure, MTU check, one node's tuned nccl.conf, down.
demo: $(STAMP)
	$(VENV)/bin/gpuctl validate examples/local-lab.yaml
	$(VENV)/bin/gpuctl up examples/local-lab.yaml --down-after

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	@if [ -d playbooks/roles ]; then $(VENV)/bin/ansible-lint --offline -q playbooks/; fi

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Two runs: every tier but the lab on both cores at once (pytest-xdist), then the lab's tests one
# after the other (they share this machine's namespaces, names and CPUs) with the hostile-input
# corpora (this run prints their summary). The lab tests marked slow are left to `make test-slow`.
test: lint typecheck
	$(VENV)/bin/pytest -n 2 -m "not lab" --ignore=tests/hostile
	$(VENV)/bin/pytest -m "not slow" tests/lab tests/hostile

test-slow: $(STAMP)
	$(VENV)/bin/pytest -m slow tests/lab

unit: $(STAMP)
	$(VENV)/bin/pytest -m "unit or pulumi_mock or fake_cloud"

bench: $(STAMP)
	$(PY) bench/cli_startup.py
	$(PY) bench/tune_bench.py
	PYTHONPATH=. $(PY) bench/capture_facts.py .
	$(PY) bench/controller_bench.py
	$(PY) bench/pulumi_bench.py
	$(PY) bench/pulumi_bench_tencent.py
	$(PY) bench/lab_bench.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
