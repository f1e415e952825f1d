# pqlab: `make help` lists the targets. `make reproduce` and `make test` each work alone on a
# fresh clone: they depend on setup through stamp files, so setup runs once.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stamp
# full = the paper-sized parameters of notebooks/params/; quick = the notebooks' stored defaults
PROFILE ?= full
CELL_TIMEOUT ?= 900
# extra papermill arguments, e.g. NB_ARGS="-p power_source ina219" (notebook 05 on a Raspberry Pi)
NB_ARGS ?=
# FRESH=1: execute every notebook again and measure what the memory cache holds again (PQLAB_FRESH, notebook 03);
# times are never cached
FRESH ?=

NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
EXECUTED := $(patsubst notebooks/%.ipynb,build/$(PROFILE)/%.ipynb,$(NOTEBOOKS))
# An executed notebook depends on the measurement core and on its own study module only, so an
# edit to one study re-runs one notebook.
CORE := $(filter-out pqlab/studies/%,$(wildcard pqlab/*.py pqlab/*/*.py))
LIBOQS_SRC := native/Cargo.toml native/Cargo.lock native/build.rs native/src/lib.rs native/liboqs.map \
              native/build-liboqs.sh
SETUP := $(STAMP)-python $(STAMP)-liboqs $(STAMP)-liboqs-generic $(STAMP)-kernel $(STAMP)-runners

.PHONY: help setup lab reproduce test lint clean FORCE

help: ## Show this help
	@echo "pqlab: what post-quantum cryptography costs next to classical algorithms"
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'
	@echo "Variables: PROFILE=full|quick (reproduce), FRESH=1 (reproduce: measure what the memory cache holds again), PYTHON=$(PYTHON)"

setup: $(SETUP) ## Create .venv, install pqlab and its dependencies, provide liboqs, register the Jupyter kernel "pqlab"

$(STAMP)-python: pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11+ or run make PYTHON=/path/to/python3.11 setup" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "error: pqlab needs Python 3.11 or newer, found " + sys.version.split()[0] + "; run make PYTHON=/path/to/python3.11 setup")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

$(STAMP)-liboqs: $(STAMP)-python $(LIBOQS_SRC) native/provide-liboqs.sh
	native/provide-liboqs.sh $(PY)
	touch $@

# The portable build (generic C only): notebook 04 compares it with the default one.
# Without cargo (a conda or system liboqs in use) it is skipped and notebook 04 says so.
$(STAMP)-liboqs-generic: $(STAMP)-liboqs native/generic-toolchain.cmake
	@if command -v cargo >/dev/null; then native/build-liboqs.sh $(PY) $(VENV)/liboqs generic; \
	else echo "note: no cargo: the portable (generic) liboqs build is skipped; notebook 04 will say so"; fi
	touch $@

$(STAMP)-kernel: $(STAMP)-python
	$(PY) -m ipykernel install --sys-prefix --name pqlab --display-name "Python (pqlab)" >/dev/null
	touch $@

# Helpers outside Python: the native cycle runner, the Bouncy Castle runner (when a JDK is
# there) and valgrind (for notebook 03; installed where apt-get can). Each says what it skipped.
$(STAMP)-runners: $(STAMP)-liboqs $(STAMP)-liboqs-generic $(wildcard native/bench/*.c native/bench/Makefile native/bc-runner/pom.xml)
	$(PY) -m pqlab.provision runners
	touch $@

# Notebook 06's TLS runner (OpenSSL 3.6 from crates.io, a few minutes' build): built on first use by the
# notebook's target and by `make test`, never by `make setup`; pqlab.tls records how long the build took.
TLS_RUNNER := native/tls-runner/target/release/tls-runner
$(TLS_RUNNER): native/tls-runner/Cargo.toml native/tls-runner/Cargo.lock native/tls-runner/src/main.rs | $(STAMP)-python
	$(PY) -m pqlab.tls build

lab: $(SETUP) ## Start JupyterLab on the pqlab kernel
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

reproduce: $(EXECUTED) ## Execute every notebook (PROFILE=full|quick) and regenerate figures/ and data/tables/
	@echo "executed notebooks: build/$(PROFILE)/; figures: figures/; tables: data/tables/"

build/$(PROFILE)/01_aes_rsa_sphincs.ipynb: pqlab/studies/aes_rsa_sphincs.py
build/$(PROFILE)/02_message_scaling.ipynb: pqlab/studies/message_scaling.py
build/$(PROFILE)/03_memory_footprint.ipynb: pqlab/studies/memory_footprint.py
build/$(PROFILE)/04_signature_cycles.ipynb: pqlab/studies/signature_cycles.py
build/$(PROFILE)/05_energy.ipynb: pqlab/studies/energy_pi4.py
build/$(PROFILE)/06_tls_handshake.ipynb: pqlab/studies/tls_handshake.py $(TLS_RUNNER)

build/$(PROFILE)/%.ipynb: notebooks/%.ipynb notebooks/params/%.yaml $(CORE) $(SETUP) $(if $(filter-out 0,$(FRESH)),FORCE)
	@mkdir -p $(@D)
	PQLAB_FRESH=$(FRESH) $(VENV)/bin/papermill --kernel pqlab --cwd notebooks --log-level WARNING \
	    $(if $(filter full,$(PROFILE)),-f notebooks/params/$*.yaml) $(NB_ARGS) $< $@

test: $(SETUP) $(TLS_RUNNER) ## Run the unit tests, then execute every notebook (quick parameters) under nbval
	$(PY) -m pytest tests
	$(PY) tests/nbval_prepare.py build/nbval
	PQLAB_OUTPUT=$(CURDIR)/build/test-output $(PY) -m pytest --nbval-lax --nbval-current-env \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=$(CELL_TIMEOUT) -p no:cacheprovider build/nbval

lint: $(STAMP)-python ## Check the code style with ruff
	$(VENV)/bin/ruff check pqlab tests

clean: ## Remove build products (executed notebooks, test outputs); keeps .venv and data/results
	rm -rf build .pytest_cache
	find . -name __pycache__ -type d -prune -not -path './.venv/*' -exec rm -rf {} +

FORCE:
