# Everything a reader or CI needs: `make test` and `make book` set themselves up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# pytest workers: notebooks are distributed whole (--dist loadfile), never cell by cell
JOBS   ?= 2
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg

.PHONY: setup test test-package book execute lab bench clean

setup: $(STAMP)

# Re-installs only when the pins change; a second `make test` reuses the environment.
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

# The package tests and every chapter re-run cell by cell by nbval, outputs compared.
test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $(NBVAL)

# The package tests alone (seconds).
test-package: $(STAMP)
	$(BIN)/python -m pytest tests

# The HTML book from the stored outputs; warnings are errors.
book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going
	@echo "The book: file://$(CURDIR)/_build/html/index.html"

# Re-run every chapter top to bottom in a fresh kernel and store its outputs.
# One notebook: make execute NB=chapters/01_dot_product_attention.ipynb
NB ?= $(sort $(wildcard chapters/*.ipynb))
execute: $(STAMP)
	@for nb in $(NB); do \
	  echo "executing $$nb"; \
	  start=$$(date +%s); \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=1200 --ExecutePreprocessor.kernel_name=python3 \
	    --ExecutePreprocessor.record_timing=False $$nb || exit 1; \
	  echo "  $$(( $$(date +%s) - start )) s"; \
	done

lab: $(STAMP)
	$(BIN)/jupyter lab

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf _build .pytest_cache
