# pqlab: `make help` lists the targets. `make reproduce` and `make test` each work alone on a
# fresh clone: they depend on setup through stamp files, so setup runs once.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
STAMP := $(VENV)/.stamp
# full = the paper-sized parameters of notebooks/params/; quick = the notebooks' stored defaults
PROFILE ?= full
CELL_TIMEOUT ?= 900
# extra papermill arguments, e.g. NB_ARGS="-p power_source ina219" (notebook 05 on a Raspberry Pi)
NB_ARGS ?=
# where `make lab` listens, and the folder it opens (default: the checkout, with my-notebooks/ for your own)
LAB_IP ?= 127.0.0.1
LAB_PORT ?= 8888
LAB_DIR ?=
ifeq ($(filter $(PROFILE),full quick),)
$(error PROFILE=$(PROFILE) is not a profile: use PROFILE=full or PROFILE=quick)
endif
# Each profile exports into its own tree: full into figures/ and data/tables/, quick into build/quick/
EXPORTS := $(if $(filter full,$(PROFILE)),.,build/$(PROFILE))
# FRESH=1: execute every notebook again and measure what the memory cache holds again (PQLAB_FRESH, notebook 03);
# times are never cached
FRESH ?=

NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
EXECUTED := $(patsubst notebooks/%.ipynb,build/$(PROFILE)/%.ipynb,$(NOTEBOOKS))
# An executed notebook depends on the measurement core and on its own study module only, so an
# edit to one study re-runs one notebook.
CORE := $(filter-out pqlab/studies/% pqlab/publish/report%.py,$(wildcard pqlab/*.py pqlab/*/*.py pqlab/*/*/*.py))
LIBOQS_SRC := $(wildcard native/liboqs/*/Cargo.toml native/liboqs/*/Cargo.lock) pqlab/core/builds.py native/liboqs_shim.c native/liboqs.map pqlab/liboqs/build.py pqlab/liboqs/loader.py
SETUP := $(STAMP)-python $(STAMP)-liboqs $(STAMP)-kernel $(STAMP)-runners
# The portable liboqs build and the older liboqs releases (pqlab.core.builds): not part of setup, built on first
# need by what uses them (notebook 04, the tests); here as prerequisites so that their build is not inside a run.
GENERIC := $(STAMP)-liboqs-generic
RELEASES := $(STAMP)-liboqs-releases

.PHONY: help setup lab reproduce report paper readme-durations readme-liboqs lock test test-unit test-notebooks test-paper test-report test-bare lint clean FORCE

help: ## Show this help
	@echo "pqlab: what post-quantum cryptography costs next to classical algorithms"
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-17s %s\n", $$1, $$2}'
	@echo "Variables: PROFILE=full|quick (reproduce, paper), LIBOQS_SOURCE=DIR (setup: a liboqs source tree, e.g. 0.16.0), FRESH=1 (reproduce: measure what the memory cache holds again), PYTHON=$(PYTHON), LAB_IP, LAB_PORT, LAB_DIR (lab)"

# A stamp says a step ran, not that what it made is still there (another clone's setup against a shared venv can
# remove the venv's pqlab_liboqs.pth): every `make setup` checks what the stamps stand for (liboqs loads from the
# venv, the kernel and the notebook filter exist, the runners are built) and provisions again what is missing,
# one line per repair (pqlab.app.provision verify; quick and silent on a complete checkout).
setup: $(SETUP) ## Create .venv, install the locked dependencies and pqlab, provide liboqs, register the Jupyter kernel "pqlab"; LIBOQS_SOURCE=DIR builds that liboqs source tree and measures on it
	@$(PY) -m pqlab.app.provision verify
	@if [ -n "$(LIBOQS_SOURCE)" ]; then $(PY) -m pqlab.app.provision liboqs-source "$(LIBOQS_SOURCE)"; fi

# Exact versions and hashes from requirements.lock (make lock), then pqlab itself without dependencies.
# uv installs them: the locked uv first, hash-checked by pip, then uv installs the rest in seconds
# where pip takes minutes (README.md, "How long setup takes").
$(STAMP)-python: pyproject.toml requirements.lock
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11+ or run make PYTHON=/path/to/python3.11 setup" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "error: pqlab needs Python 3.11 or newer, found " + sys.version.split()[0] + "; run make PYTHON=/path/to/python3.11 setup")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	awk '/^uv==/ {p = 1} p && !/^uv==/ && !/--hash=/ {exit} p' requirements.lock > $(VENV)/uv-requirement.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r $(VENV)/uv-requirement.txt
	$(UV) pip install --quiet --python $(PY) --require-hashes -r requirements.lock
	$(UV) pip install --quiet --python $(PY) --no-deps --no-build-isolation -e .
	touch $@

# liboqs: one already loadable is used; else pqlab's CMake build of the oqs-sys crate's sources,
# compiled once per machine into ~/.cache/pqlab/liboqs (pqlab/liboqs/build.py) and copied from there.
# It builds on Linux only (README.md, "The CI matrix"): on macOS setup stops with the reason.
$(STAMP)-liboqs: $(STAMP)-python $(LIBOQS_SRC)
	@if [ "$$(uname -s)" = Darwin ]; then echo "error: native/ builds liboqs on Linux only: pqlab/liboqs/build.py links with GNU ld options (--whole-archive, --version-script, -soname) that Apple's linker lacks, and pqlab.liboqs.loader expects liboqs.so and reads /proc/self/maps (README.md, 'The CI matrix')" >&2; exit 1; fi
	$(PY) -m pqlab.app.provision liboqs default
	touch $@

$(GENERIC): $(STAMP)-python $(LIBOQS_SRC)
	$(PY) -m pqlab.app.provision liboqs generic
	touch $@

$(RELEASES): $(STAMP)-python $(LIBOQS_SRC) $(wildcard native/liboqs/*/Cargo.lock)
	$(PY) -m pqlab.app.provision liboqs releases
	touch $@

# The kernel, and git's nbstripout filter (.gitattributes): a notebook run and saved in JupyterLab is stored
# without outputs (make lab configures the filter again, in case this checkout's .git/config lost it).
$(STAMP)-kernel: $(STAMP)-python
	$(PY) -m ipykernel install --sys-prefix --name pqlab --display-name "Python (pqlab)" >/dev/null
	$(PY) -m pqlab.app.provision notebook-filter
	touch $@

# Helpers outside Python: the TSC helper (into ~/.cache/pqlab), the native cycle runner, the
# Bouncy Castle runner (when a JDK is there) and valgrind (for notebook 03; installed where
# apt-get can). Each says what it skipped.
$(STAMP)-runners: $(STAMP)-liboqs pqlab/measure/tsc.c pqlab/measure/tsc.h pqlab/measure/reference_loops.c $(wildcard native/bench/*.c native/bench/Makefile native/impls/java/pom.xml)
	$(PY) -m pqlab.app.provision runners
	touch $@

# Notebook 06's TLS runner (OpenSSL 3.6 from crates.io, a few minutes' build): built on first use by the
# notebook's target and by `make test`, never by `make setup`; pqlab.runners.tls records how long the build took.
TLS_RUNNER := native/tls-runner/target/release/tls-runner
$(TLS_RUNNER): native/tls-runner/Cargo.toml native/tls-runner/Cargo.lock $(wildcard native/tls-runner/src/*.rs) \
    native/tls-runner/program.toml | $(STAMP)-python
	$(PY) -m pqlab.runners.tls build

lab: $(SETUP) ## Start JupyterLab on the checkout (or LAB_DIR), pqlab kernel; say where it listens (as root too)
	@$(PY) -m pqlab lab --ip $(LAB_IP) --port $(LAB_PORT) --dir "$(LAB_DIR)"

reproduce: $(EXECUTED) ## Execute every notebook (PROFILE=full|quick), regenerate its figures and tables, print the times, write the report
	@echo "executed notebooks: build/$(PROFILE)/; figures: $(EXPORTS)/figures/; tables: $(EXPORTS)/data/tables/"
	@$(PY) -m pqlab.publish.durations build/$(PROFILE)
	@$(PY) -m pqlab.publish.report build/$(PROFILE) --exports $(EXPORTS)

# The executed notebooks as static HTML pages with an index (run context, exports): nbconvert, nothing executed,
# opened or served; the folder works copied elsewhere (pqlab/publish/report.py).
report: $(STAMP)-python ## Render build/PROFILE/*.ipynb as executed (PROFILE=full|quick) and the exports to build/PROFILE/report/index.html
	$(PY) -m pqlab.publish.report build/$(PROFILE) --exports $(EXPORTS)

paper: $(EXECUTED) ## Typeset paper/ from the PROFILE's exports (reproducing them first where missing or stale) into build/paper/pqlab.pdf
	@$(PY) -m pqlab.app.provision latex
	$(PY) -m pqlab paper --profile $(PROFILE)

# a study is a module or a package of pqlab/studies/
study = $(wildcard pqlab/studies/$(1).py pqlab/studies/$(1)/*.py)
build/$(PROFILE)/01_aes_rsa_sphincs.ipynb: $(call study,aes_rsa_sphincs)
build/$(PROFILE)/02_message_scaling.ipynb: $(call study,message_scaling)
build/$(PROFILE)/03_memory_footprint.ipynb: $(call study,memory_footprint)
# notebook 04 also compares the portable liboqs build with the default one, and liboqs releases
build/$(PROFILE)/04_signature_cycles.ipynb: $(call study,signature_cycles) $(call study,round2_study) \
    $(call study,liboqs_releases) $(GENERIC) $(RELEASES)
build/$(PROFILE)/05_energy.ipynb: $(call study,energy_pi4)
build/$(PROFILE)/06_tls_handshake.ipynb: $(call study,tls_handshake) $(TLS_RUNNER)
build/$(PROFILE)/07_atlas.ipynb: $(call study,atlas)
# every external program speaks one protocol through one record (native/PROTOCOL.md, pqlab/runners/program.py)
PROGRAMS := native/PROTOCOL.md pqlab/runners/program.py pqlab/runners/base.py \
    $(wildcard native/*/program.toml native/*/*/program.toml native/*/*/*/program.toml)
# notebook 08 builds the programs of native/impls on first use (pqlab.runners.impls), not make
build/$(PROFILE)/08_implementations.ipynb: $(call study,implementations) pqlab/runners/impls.py pqlab/checks/crosscheck.py \
    pqlab/checks/vectors.py $(PROGRAMS)
# notebook 09 builds the programs of native/leakage on first use (pqlab.runners.leakage), not make
build/$(PROFILE)/09_timing_leakage.ipynb: $(call study,timing_leakage) pqlab/checks/leakage.py pqlab/runners/leakage.py \
    $(call study,timing_leakage_builds) pqlab/checks/disassembly.py pqlab/checks/taint.py $(PROGRAMS)

# the conformance caveats and the price of a missing check (issue #42), shared by the notebooks that time liboqs ML-DSA
$(addprefix build/$(PROFILE)/,$(addsuffix .ipynb,01_aes_rsa_sphincs 02_message_scaling 03_memory_footprint \
    04_signature_cycles 05_energy 07_atlas)): pqlab/studies/conforming.py
build/$(PROFILE)/%.ipynb: notebooks/%.ipynb notebooks/params/%.yaml $(CORE) $(SETUP) $(if $(filter-out 0,$(FRESH)),FORCE)
	@mkdir -p $(@D) && rm -f $(@D)/failed/$*.ipynb
	PQLAB_PROFILE=$(PROFILE) PQLAB_FRESH=$(FRESH) $(VENV)/bin/papermill --kernel pqlab --cwd notebooks --log-level WARNING \
	    $(if $(filter full,$(PROFILE)),-f notebooks/params/$*.yaml) $(NB_ARGS) $< $@ \
	  || { mkdir -p $(@D)/failed; mv -f $@ $(@D)/failed/$*.ipynb 2>/dev/null; echo "$* failed: its executed copy, with the error, is" \
	       "$(@D)/failed/$*.ipynb; the runs it saved are in data/results/" >&2; exit 1; }

readme-durations: ## Rewrite the times in README.md's notebook table from build/{quick,full}/durations.csv
	$(PY) -m pqlab.publish.durations --readme

readme-liboqs: ## Keep notebook 04's comparison of pqlab's liboqs with a newer one (PROFILE's exports) in data/measured/, and README.md's table of it
	$(PY) -m pqlab.publish.readme liboqs $(EXPORTS)

lock: ## Refresh requirements.lock (exact versions and hashes, every platform) with uv, from pyproject.toml
	@test -x $(UV) || { echo "error: $(UV) is missing: run make setup first" >&2; exit 1; }
	$(PY) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
	    | $(UV) pip compile --quiet --universal --python-version 3.11 --generate-hashes --all-extras \
	      --output-file requirements.lock pyproject.toml -

test: test-unit test-notebooks test-paper ## Run the unit tests, execute every notebook (quick parameters) under nbval, build the paper from their exports

# Parts of `make test` (.ci/run repeats them with other counters): UNIT narrows the pytest run
# (e.g. UNIT="-m counter"), NBVAL the notebooks (e.g. NBVAL=build/nbval/04_signature_cycles.ipynb).  The unit
# tests run on every core (pytest-xdist, JOBS=1 for one process: 401 s against 605 s on 2 cores, issue #43);
# the notebooks one after another, as a reader runs them (each measures, and a later one may read an earlier one's
# runs).
# Tests marked `serial` assert what a timing measurement found (a leak screen's power): they run alone, after the
# others, never beside a build or another test (SERIAL= when UNIT selects by marker itself).
UNIT ?= tests
JOBS ?= auto
SERIAL ?= serial
NBVAL ?= build/nbval
test-unit: $(SETUP) $(GENERIC) $(RELEASES) $(TLS_RUNNER)
	@t=$$(date +%s) && $(PY) -m pytest -n $(JOBS) $(if $(SERIAL),-m "not $(SERIAL)") $(UNIT) \
	    $(if $(SERIAL),&& $(PY) -m pytest -m $(SERIAL) $(UNIT)) \
	    && echo "== unit tests ($(UNIT), $(JOBS) workers$(if $(SERIAL),; then the $(SERIAL) ones alone)) in $$(( $$(date +%s) - t )) s"

TEST_OUTPUT ?= build/test-output
# README's recipe (notebooks/own_comparison.ipynb) runs under nbval too, into its own folder as a user's notebook
# would (RECIPE= leaves it out); test-paper compiles its exports in a two-column document (tests/publish/test_recipe.py).
RECIPE ?= build/nbval-recipe/own_comparison.ipynb
RECIPE_OUTPUT ?= build/test-recipe
# -p nbval_prose (tests/nbval_prose.py): a factor a generated sentence prints without its interval fails its cell
NBVAL_RUN = PYTHONPATH=$(CURDIR)/tests$${PYTHONPATH:+:$$PYTHONPATH} $(PY) -m pytest --nbval-lax --nbval-current-env \
	    --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=$(CELL_TIMEOUT) -p no:cacheprovider \
	    -p nbval_prose
test-notebooks: $(SETUP) $(GENERIC) $(RELEASES) $(TLS_RUNNER)
	$(PY) tests/nbval_prepare.py build/nbval
	@t=$$(date +%s) && PQLAB_PROFILE=quick PQLAB_OUTPUT=$(CURDIR)/$(TEST_OUTPUT) $(NBVAL_RUN) $(NBVAL) \
	    && echo "== notebooks under nbval in $$(( $$(date +%s) - t )) s"
	$(if $(RECIPE),$(PY) tests/nbval_prepare.py $(dir $(RECIPE)) --pattern $(notdir $(RECIPE)))
	$(if $(RECIPE),PQLAB_PROFILE=quick PQLAB_OUTPUT=$(CURDIR)/$(RECIPE_OUTPUT) $(NBVAL_RUN) $(RECIPE))

# The paper from the quick exports test-notebooks left in TEST_OUTPUT, and the recipe's exports in a two-column
# document (after it in `make test`).
test-paper: $(SETUP)
	PQLAB_PAPER_FROM=$(CURDIR)/$(TEST_OUTPUT) PQLAB_RECIPE_FROM=$(CURDIR)/$(RECIPE_OUTPUT) \
	    $(PY) -m pytest tests/publish/test_paper.py tests/publish/test_recipe.py -k quick_exports -p no:cacheprovider

# The browser tests alone (they also run in test-unit): the report's pages, and notebook 01 run and saved in
# `make lab` with git status clean after (tests/app/test_lab_browser.py). Debian's chromium, installed where apt-get
# can, driven by Playwright; a missing browser fails them here instead of skipping them.
test-report: $(SETUP)
	$(PY) -m pqlab.app.provision browser
	PQLAB_REQUIRE_BROWSER=1 $(PY) -m pytest tests/publish/test_report.py tests/publish/test_rerun.py tests/app/test_lab_browser.py \
	    -p no:cacheprovider

# A machine without a JDK and without valgrind, forced on this one (after `make test`): notebooks 01 and 03
# under nbval with java, javac and valgrind missing from PATH (tests/path_without.py), over a copy of the
# quick exports, then the paper from them. Its memory cache is its own (build/bare-cache).
BARE_NOTEBOOKS = build/nbval/01_aes_rsa_sphincs.ipynb build/nbval/03_memory_footprint.ipynb
test-bare: $(SETUP)
	rm -rf build/test-output-bare build/bare-cache
	cp -r build/test-output build/test-output-bare
	PATH="$$($(PY) tests/path_without.py build/path-bare java javac valgrind)" PQLAB_CACHE=$(CURDIR)/build/bare-cache \
	    $(MAKE) test-notebooks TEST_OUTPUT=build/test-output-bare NBVAL="$(BARE_NOTEBOOKS)" RECIPE=
	$(MAKE) test-paper TEST_OUTPUT=build/test-output-bare

lint: $(STAMP)-python ## Check the code style with ruff
	$(VENV)/bin/ruff check pqlab tests

clean: ## Remove build products (executed notebooks, test outputs); keeps .venv, data/results and the liboqs cache
	rm -rf build .pytest_cache
	find . -name __pycache__ -type d -prune -not -path './.venv/*' -exec rm -rf {} +

FORCE:
