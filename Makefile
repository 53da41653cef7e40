# Fresh machine: `make bench` (set up + run the host profile) and `make test` (set up + CPU test tier).
PYTHON ?= python3
VENV   ?= .venv
DEVICE ?= host
ARGS   ?=
BIN    := $(VENV)/bin
# extras the local environment gets; a Jetson venv will add --system-site-packages (see README)
EXTRAS ?= export,ort,progress,dev

.PHONY: bench test setup lint doctor clean-runs
setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[$(EXTRAS)]'
	touch $@

bench: setup
	$(BIN)/edgebench bench --device $(DEVICE) $(ARGS)

test: setup
	$(BIN)/ruff check edgebench tests benchmarks
	$(BIN)/python -m pytest -q -rs $(ARGS)

lint: setup
	$(BIN)/ruff check edgebench tests benchmarks

doctor: setup
	$(BIN)/edgebench doctor
