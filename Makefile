# rvfx: `make reproduce` runs every spec at SCALE, draws every figure and tests the paper's claims
# (report.md, report.html; verdicts, never a failure); `make test` runs the linters (`make lint`:
# ruff, and import-linter's layer contracts) and the tests.
SCALE ?= ci
JOBS ?= 2
OUT ?= results
FIGS ?= figures
PYTHON ?= python3
VENV := .venv
RVFX := $(VENV)/bin/rvfx
SPECS := $(sort $(wildcard configs/*.yaml))

.PHONY: install reproduce run plot report lint test bench clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -c constraints.txt -e '.[test,gym,bsuite]'
	touch $@

install: $(VENV)/.installed

run: install
	@set -e; for spec in $(SPECS); do $(RVFX) run $$spec --scale $(SCALE) --jobs $(JOBS) --out $(OUT); done

plot: install
	$(RVFX) plot --results $(OUT) --out $(FIGS)

report: install
	$(RVFX) report --results $(OUT) --out $(FIGS)

reproduce: run plot report

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

test: install lint
	$(VENV)/bin/pytest -q

bench: install
	$(VENV)/bin/python benchmarks/run_all.py

clean:
	rm -rf $(OUT)/*/ $(FIGS)/*.png $(FIGS)/*.pdf $(FIGS)/*.csv $(FIGS)/*.md $(FIGS)/*.html
