# rvfx: `make reproduce` runs every spec at SCALE, draws every figure, exports the per-run tables
# the claims read beside the figures (FIGS/<experiment>/) and tests the paper's claims on them
# (report.md, report.html; verdicts, never a failure); with FIGS=figures/paper it also fills the
# report blocks of the README and of docs/ (the results pages). `make check-paper` checks the
# committed paper report and those blocks against the committed paper tables. `make test` runs the linters (`make lint`: ruff, and
# import-linter's layer contracts) and the tests. `make install` installs the core and the test extra;
# EXTRAS=gym,bsuite (or dask, fast, docs) adds those, whose specs and tests otherwise skip, saying so.
SCALE ?= ci
JOBS ?= 2
OUT ?= results
FIGS ?= figures
PYTHON ?= python3
VENV := .venv
RVFX := $(VENV)/bin/rvfx
BSUITE_VENV := .venv-bsuite
SPECS := $(sort $(wildcard configs/*.yaml))

PAPER := figures/paper
PAGES := --readme README.md --docs docs
README_BLOCKS := $(if $(filter $(PAPER) $(PAPER)/,$(FIGS)),$(PAGES))

.PHONY: install bsuite-venv torch-venv reproduce run plot export report check-paper lint test bench clean

# the core and the test extra; EXTRAS adds others (make install EXTRAS=gym,bsuite; gym, bsuite, dask, fast, docs)
EXTRAS ?=
comma := ,
WITH := test$(if $(EXTRAS),$(comma)$(EXTRAS))

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[$(WITH)]'
	touch $@

install: $(VENV)/.installed
ifneq ($(EXTRAS),)
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[$(WITH)]'
endif

# bsuite's own boot_dqn (JAX) in a venv of its own: tests/test_bsuite.py's equivalence test, the boot_dqn arms
$(BSUITE_VENV)/.installed: requirements-bsuite.txt
	$(PYTHON) -m venv $(BSUITE_VENV)
	$(BSUITE_VENV)/bin/pip install --quiet --upgrade pip
	$(BSUITE_VENV)/bin/pip install --quiet --no-deps -r requirements-bsuite.txt
	touch $@

bsuite-venv: $(BSUITE_VENV)/.installed

# PyTorch (CPU) in a venv of its own, the peer of benchmarks/bench_neural_step.py (benchmarks/torch_step.py);
# pinned: a plain `torch` resolves to a multi-GB CUDA build
torch-venv:
	$(PYTHON) -m venv .venv-torch && .venv-torch/bin/pip install torch==2.13.0 numpy

# a spec whose environment comes from an extra (env name gym or bsuite) runs where the extra is installed
run: install
	@set -e; for spec in $(SPECS); do \
	  extra=$$(sed -n 's/^  name: \(gym\|bsuite\)$$/\1/p' $$spec); \
	  module=$$(echo "$$extra" | sed 's/^gym$$/gymnasium/'); \
	  if [ -n "$$extra" ] && ! $(VENV)/bin/python -c "import $$module" 2>/dev/null; then \
	    echo "skipped $$spec: it needs the $$extra extra (make install EXTRAS=$$extra)"; continue; fi; \
	  $(RVFX) run $$spec --scale $(SCALE) --jobs $(JOBS) --out $(OUT); done

plot: install
	$(RVFX) plot --results $(OUT) --out $(FIGS)

export: install
	$(RVFX) export --results $(OUT) --out $(FIGS) --scale $(if $(README_BLOCKS),paper,$(SCALE))

report: install
	$(RVFX) report --results $(FIGS) --out $(FIGS) $(README_BLOCKS)

check-paper: install
	$(RVFX) report --results $(PAPER) --out $(PAPER) $(PAGES) --check

reproduce: run plot export report

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

test: install lint
	$(VENV)/bin/pytest -q -n 2

bench: install
	$(VENV)/bin/python benchmarks/run_all.py

clean:
	rm -rf $(OUT)/*/ $(FIGS)/*.png $(FIGS)/*.pdf $(FIGS)/*.csv $(FIGS)/*.md $(FIGS)/*.html
	find $(FIGS) -mindepth 1 -maxdepth 1 -type d ! -name paper -exec rm -rf {} +
