# The two set-up commands of the README: `make demo` (the main job on the embedded default, the
# local lab) and `make test` (ruff, mypy, ansible-lint, every test tier this machine can run).
# Both create .venv and install gpuctl with its dev tools first, so they work on a fresh machine.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit bench clean

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

test: lint typecheck
	$(VENV)/bin/pytest

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
