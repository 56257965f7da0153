# ACE Book. Two commands: `make book` (build everything) and `make test` (whole test suite).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Notebook kernels run "python" from PATH: make it the venv's.
export PATH := $(abspath $(VENV))/bin:$(PATH)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# the LLMs' float32 caches, built once from the bundled GGUF files (ace_helpers.llm.cache_dir)
export ACE_CACHE_DIR ?= $(abspath .cache/models)
PRESET ?= book
# Every command that computes starts under the reproducible kernels (ace_helpers/repro/kernels.py: the AVX2 code
# paths of torch, MKL, oneDNN, OpenBLAS and numpy, one thread per process); ACE_KERNELS=native opts out.
KERNELS = $(PY) -m ace_helpers.kernels --
# notebooks executed at once by `make notebooks` (each with cores // JOBS torch threads)
JOBS ?= 2

.PHONY: book test unit nbtest notebooks html site browser-test mathjax venv clean remote-venv remote-test

venv: $(STAMP)

# (this machine's pip config warns about a missing local index on every package: filtered out)
PIP := set -o pipefail; $(PY) -m pip install -q
QUIET := 2>&1 | { grep -v "neither a file nor a directory" || true; }

$(STAMP): requirements.txt requirements-models.txt constraints.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) torch==2.13.0 $(QUIET)
	$(PIP) -c constraints.txt -r requirements.txt $(QUIET)
	$(PIP) --no-deps -r requirements-models.txt $(QUIET)
	$(PIP) --no-deps --no-build-isolation -e . $(QUIET)
	touch $@

## book: venv + execute stale notebooks at the book preset (cached) + HTML into _build/html
book: notebooks html

## notebooks: re-execute every notebook whose source changed since its committed run
notebooks: $(STAMP)
	$(KERNELS) $(PY) -m ace_helpers.runbook --preset $(PRESET) --jobs $(JOBS)

## html: render the book from the committed/executed notebooks (no execution)
html: $(STAMP) mathjax
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

## site: the HTML as a relocatable static site (relative links only; .nojekyll so GitHub Pages serves _static)
site: html
	touch _build/html/.nojekyll

BROWSER_STAMP := $(VENV)/.browser-installed
$(BROWSER_STAMP): $(STAMP) requirements-browser.txt
	$(PIP) -c constraints.txt -r requirements-browser.txt $(QUIET)
	touch $@

## browser-test: open every page of the built site in headless chromium, in TEST_WORKERS processes (needs `make html` first and
## Debian's chromium: `apt-get install chromium`); screenshots go to _build/screenshots/
browser-test: $(BROWSER_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) tests/browser

mathjax: $(STAMP)
	$(PY) -m ace_helpers.runbook --install-mathjax book/_static/mathjax

## test: unit tests + every notebook at the ci preset under nbval (one pytest run), in TEST_WORKERS
## processes (default: the CPU cores; one torch thread each, so workers x threads = cores)
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
test: $(STAMP)
	ACE_PRESET=ci TORCH_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(KERNELS) $(PY) -m pytest -q --durations=15 \
	  -n $(TEST_WORKERS) --dist loadscope --nbval-lax --ignore=tests/browser --ignore=tests/remote tests notebooks

unit: $(STAMP)
	TORCH_THREADS=1 $(KERNELS) $(PY) -m pytest -q --ignore=tests/browser --ignore=tests/remote tests

## remote-venv: the local NDIF server's own venv (ndif 0.1.2, Ray, moto's S3 server; pinned in requirements-remote.txt)
NDIF_VENV ?= .venv-ndif
NDIF_STAMP := $(NDIF_VENV)/.installed
$(NDIF_STAMP): requirements-remote.txt
	test -x $(NDIF_VENV)/bin/python || python3 -m venv $(NDIF_VENV)
	set -o pipefail; $(NDIF_VENV)/bin/python -m pip install -q torch==2.13.0 $(QUIET)
	set -o pipefail; $(NDIF_VENV)/bin/python -m pip install -q -r requirements-remote.txt $(QUIET)
	set -o pipefail; $(NDIF_VENV)/bin/python -m pip install -q --no-deps --ignore-requires-python ndif==0.1.2 $(QUIET)
	touch $@
remote-venv: $(NDIF_STAMP)

## remote-test: the book's remote path against a real NDIF server started here, inside a network namespace that has
## only loopback (needs root, `ip` and Debian's redis-server, installed here when missing); stops what it started
NETNS ?= acebook-ndif
remote-test: $(STAMP) $(NDIF_STAMP)
	command -v redis-server >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@if ip netns list | grep -qw $(NETNS); then echo "a namespace $(NETNS) exists (a killed run?): ip netns pids $(NETNS), stop them, then ip netns del $(NETNS)"; exit 1; fi
	ip netns add $(NETNS)
	ip netns exec $(NETNS) ip link set lo up; \
	ip netns exec $(NETNS) env ACE_NDIF_VENV=$(abspath $(NDIF_VENV)) TORCH_THREADS=1 $(PY) -m pytest -q -p no:cacheprovider tests/remote; \
	rc=$$?; ip netns del $(NETNS); exit $$rc

clean:
	rm -rf _build outputs book/_static/mathjax
