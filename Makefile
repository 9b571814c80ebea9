# KernelGraph: `make demo` runs the main job, `make test` runs the checks. Both install what they need.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install test lint typecheck demo demo-agents neo4j-start neo4j-stop clean

install: $(STAMP)
	@$(BIN)/kernelgraph neo4j install

# Re-install only when the project's dependencies change.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (fix: install Python 3.11)"; exit 1; }
	@./scripts/ensure-system-packages.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -U pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check service agent client core tests scripts kernelgraph/*.py kernelgraph/cli kernelgraph/bench
	$(BIN)/ruff format --check service agent client core tests scripts kernelgraph/*.py kernelgraph/cli kernelgraph/bench
	$(BIN)/lint-imports  # the seams: pyproject.toml [tool.importlinter]

typecheck: $(STAMP)
	$(BIN)/mypy

# pytest starts (and stops) a throw-away Neo4j on free ports unless KERNELGRAPH_NEO4J_URI is set.
test: install lint typecheck
	$(BIN)/pytest -q --durations=25; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

demo: install
	$(BIN)/kernelgraph neo4j start
	$(BIN)/kernelgraph schema apply
	$(BIN)/kernelgraph demo

# Four agent processes on related tasks share the HTTP service at once, then run alone (AGENTS=N to change).
AGENTS ?= 4
demo-agents: install
	$(BIN)/kernelgraph neo4j start
	$(BIN)/kernelgraph schema apply
	$(BIN)/kernelgraph demo --agents $(AGENTS)

neo4j-start: install
	$(BIN)/kernelgraph neo4j start

neo4j-stop:
	$(BIN)/kernelgraph neo4j stop

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
