# jupyterlab-scorep: `make lab` to try it, `make test` to check it.
#
# Every step is stamped under .stamps/ and redone only when its inputs change, so a second
# `make setup` takes a second or two.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .stamps
# jlpm comes from jupyter-builder inside the venv; it is yarn pinned for JupyterLab.
JLPM := $(BIN)/jlpm
CHROMIUM ?= /usr/lib/chromium/chromium
PORT ?= 8888
# Real Score-P for the Score-P tests: ../shared/scorep (CI and these machines have it)
# installs it under /opt/scorep. A user's own Score-P is found on their PATH.
SCOREP_SHARED ?= $(CURDIR)/../shared/scorep
SCOREP_BIN ?= /opt/scorep/bin
# Jupyter refuses to run as root without this (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
# The package.json scripts call `jlpm` and `jupyter` by name: the venv's must come first;
# Score-P's bin/ (scorep-config, otf2-print, cube_stat) next, when it is installed there.
export PATH := $(CURDIR)/$(BIN):$(SCOREP_BIN):$(PATH)

FRONTEND_SOURCES := $(shell find src style schema -type f 2>/dev/null) package.json tsconfig.json

.PHONY: help setup lab test lint test-python test-js test-ui test-wheel wheel bench clean

help:
	@echo "make lab    set everything up and open JupyterLab on examples/"
	@echo "make test   set everything up and run every check: lint and types, pytest, jest,"
	@echo "            Galata, and the wheel installed into a clean environment"
	@echo "make lint   ruff, mypy, eslint, prettier, stylelint only"
	@echo "make wheel  build the wheel a user installs (pip install dist/jupyterlab_scorep-*.whl)"
	@echo "make bench  run the benchmarks and write benchmarks/RESULTS.md (installs torch)"
	@echo "make setup  only set up: .venv, Python and npm dependencies, the built extension"
	@echo "make clean  remove what setup made"

# The native OTF2 scanner the server loads (server_ext/native/; the editable install builds
# it too, this rebuilds it when its source changes).
SCANNER := server_ext/jupyterlab_scorep/trace/libotf2_scan.so

setup: $(STAMPS)/system $(STAMPS)/python $(STAMPS)/build $(STAMPS)/develop $(STAMPS)/ui-deps \
	$(STAMPS)/scorep $(SCANNER) $(STAMPS)/calltrace

$(STAMPS):
	@mkdir -p $@

# Debian packages: chromium for the UI tests, otf2-tools for `otf2-print` in the trace tests,
# Open MPI for the MPI cells' tests (mpirun, and mpicc for building mpi4py of the test extra),
# iproute2 and util-linux (ip netns, unshare) for the hosts of kernel/tests/netns_hosts.py,
# slurm-wlm and munge for the one-node Slurm cluster of kernel/tests/slurm_cluster.py, lmod
# for the README's cluster recipe (`module load scorep`, kernel/tests/test_cluster_recipe.py;
# Lmod's `module` is a shell function, so its init script is looked for, not a command).
$(STAMPS)/system: | $(STAMPS)
	@need=(); \
	[ -x "$(CHROMIUM)" ] || need+=(chromium); \
	command -v otf2-print >/dev/null || need+=(otf2-tools); \
	command -v mpirun >/dev/null || need+=(openmpi-bin); \
	command -v mpicc >/dev/null || need+=(libopenmpi-dev); \
	command -v ip >/dev/null || need+=(iproute2); \
	command -v unshare >/dev/null || need+=(util-linux); \
	command -v slurmd >/dev/null || need+=(slurm-wlm); \
	command -v munged >/dev/null || need+=(munge); \
	[ -r /usr/share/lmod/lmod/init/bash ] || need+=(lmod); \
	if [ $${#need[@]} -gt 0 ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "==> Installing Debian packages: $${need[*]}"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$${need[@]}" >/dev/null; \
	  else \
	    echo "==> Missing system packages: $${need[*]}. Install them (e.g. sudo apt-get install $${need[*]});"; \
	    echo "    the UI tests need chromium, the trace tests skip otf2-print checks without otf2-tools,"; \
	    echo "    and the MPI tests skip without openmpi-bin (libopenmpi-dev builds mpi4py)."; \
	  fi; \
	fi
	@touch $@

$(BIN)/python:
	@echo "==> Creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The builder tools first: jlpm (needed to install npm packages) comes with jupyter-builder.
$(STAMPS)/builder: $(BIN)/python | $(STAMPS)
	$(BIN)/pip install -q "jupyter-builder>=1.2,<2" "jupyterlab>=4.4,<5" hatchling hatch-jupyter-builder hatch-nodejs-version
	@touch $@

$(STAMPS)/node-deps: package.json $(wildcard yarn.lock) $(STAMPS)/builder
	@echo "==> Installing npm dependencies"
	$(JLPM) install
	@touch $@

# Editable install; the build hook runs `jlpm build` and writes the labextension.
$(STAMPS)/python: pyproject.toml $(wildcard kernel/kernelspec/scorep-python/*) $(STAMPS)/node-deps
	@echo "==> Installing jupyterlab-scorep (editable) with its dev and test extras"
	$(BIN)/pip install -q -e ".[dev,test]"
	@touch $@

$(SCANNER): server_ext/native/otf2_scan.c server_ext/native/lod_merge.c server_ext/native/busy_search.c server_ext/native/build_scanner.py $(STAMPS)/python
	$(BIN)/python server_ext/native/build_scanner.py
	@touch $@

# The builtin tracer's C recorder (kernel/native/; CPython 3.11, VizTracer's tracer elsewhere).
$(STAMPS)/calltrace: kernel/native/calltrace.c kernel/native/build_calltrace.py $(STAMPS)/python
	$(BIN)/python kernel/native/build_calltrace.py
	@touch $@

$(STAMPS)/build: $(FRONTEND_SOURCES) $(STAMPS)/python
	@echo "==> Building the extension"
	$(JLPM) build
	@touch $@

# Make the installed labextension a symlink to the build output, so `jlpm build` is enough.
$(STAMPS)/develop: $(STAMPS)/build
	$(BIN)/jupyter labextension develop . --overwrite >/dev/null
	@touch $@

# Score-P from ../shared/scorep when it is there (its install.sh: /opt/scorep, the Debian
# runtime packages, the bindings into the venv). The bindings compile and link a small
# library at every `python -m scorep` start against Score-P's dependencies, so the -dev
# packages of libunwind and libbfd are needed too (install.sh brings only the runtimes).
$(STAMPS)/scorep: $(STAMPS)/python
	@if [ -x "$(SCOREP_SHARED)/install.sh" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    need=(); for p in libunwind-dev binutils-dev; do dpkg -s $$p >/dev/null 2>&1 || need+=($$p); done; \
	    if [ $${#need[@]} -gt 0 ]; then \
	      echo "==> Installing Debian packages Score-P's bindings link against: $${need[*]}"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$${need[@]}" >/dev/null; \
	    fi; \
	  fi; \
	  "$(SCOREP_SHARED)/install.sh" $(CURDIR)/$(BIN)/python; \
	else \
	  echo "==> No ../shared/scorep here: the Score-P tests skip unless Score-P is on PATH"; \
	fi
	@touch $@

$(STAMPS)/ui-deps: ui-tests/package.json $(wildcard ui-tests/yarn.lock) $(STAMPS)/builder
	@echo "==> Installing the UI tests' npm dependencies"
	cd ui-tests && ../$(JLPM) install
	@touch $@

lab: setup
	@echo "==> Starting JupyterLab on examples/ (Ctrl-C to stop); open the URL printed below."
	$(BIN)/jupyter lab --notebook-dir=examples --port=$(PORT) $(ROOT_FLAG)

test: setup $(STAMPS)/torch lint test-python test-js test-ui test-wheel
	@echo "==> All checks passed"

# torch's CPU build for the tests that profile PyTorch cells (kernel/tests/test_accel_kernel.py,
# test_state_torch.py): they skip without it, and then nothing in CI would check that
# torch.profiler's operators still reach the trace when torch changes. Not in `setup`: a
# user's `make lab` needs no torch. The device lanes' tests need no torch (Kineto-format traces).
TORCH ?= torch==2.13.0
$(STAMPS)/torch: $(STAMPS)/python
	@echo "==> Installing $(TORCH) (CPU build) for the PyTorch tests"
	$(BIN)/pip install -q "$(TORCH)"
	@touch $@

lint: setup
	@echo "==> ruff (lint and format), mypy"
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	@echo "==> stylelint, prettier, eslint"
	$(JLPM) lint:check
	@echo "==> tsc (strict) on the Galata specs"
	node_modules/.bin/tsc -p ui-tests

test-python:
	@echo "==> pytest (kernel and server)"
	$(BIN)/python -m pytest

test-js:
	@echo "==> jest"
	$(JLPM) test

test-ui:
	@echo "==> Galata UI tests in Chromium ($(CHROMIUM))"
	cd ui-tests && CI=1 PATH="$(CURDIR)/$(BIN):$$PATH" SCOREP_UI_CHROMIUM="$(CHROMIUM)" ../$(JLPM) playwright test

# The wheel a user would pip install, in a fresh virtual environment: the labextension,
# server extension and kernel spec are registered, and a profiled cell runs from it.
test-wheel: setup
	@echo "==> The wheel in a clean virtual environment"
	$(BIN)/python .ci/check_wheel.py

wheel: setup
	$(BIN)/python -m pip wheel --no-deps --no-build-isolation -q -w dist .
	@ls dist/jupyterlab_scorep-*.whl

bench: setup $(STAMPS)/torch
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(STAMPS) $(VENV) .wheel-check node_modules ui-tests/node_modules lib tsconfig.tsbuildinfo \
	  server_ext/jupyterlab_scorep/labextension server_ext/jupyterlab_scorep/_version.py \
	  $(SCANNER) build/native kernel/scorep_kernel/measure/_calltrace.*.so
