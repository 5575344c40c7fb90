# Two commands on a fresh machine: `make preview` and `make test`. Each bootstraps .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: preview test lint bench mutations clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -e '.[dev]'
# --no-compile skips bytecode for the huge provider SDKs (fast install); write it for just the modules a preview
# loads, once, or every run compiles them again where PYTHONDONTWRITEBYTECODE is set (half a preview's CPU)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m gpufleet.cli preview --all --no-policies --format json > /dev/null
	touch $(STAMP)

preview: $(STAMP)
	$(BIN)/gpufleet preview --all

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python benchmarks/preview_bench.py
	$(BIN)/python benchmarks/pr_bench.py
	$(BIN)/python benchmarks/capacity_bench.py
	$(BIN)/python benchmarks/fleet_sim_bench.py
	$(BIN)/python benchmarks/actuals_bench.py
	GPUFLEET_INVARIANTS=long GPUFLEET_HYPOTHESIS=explore $(BIN)/python -m pytest -n 2 tests/invariants

# cosmic-ray over the modules that decide money, health and claims; sessions in .mutants/ carry over between runs
MUTATION_MINUTES ?= 20
mutations: $(STAMP)
	$(BIN)/python scripts/mutants.py --minutes $(MUTATION_MINUTES)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
