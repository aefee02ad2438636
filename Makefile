# `make demo` and `make test` bootstrap .venv themselves on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[dev,aws]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check runtime tests bench functions

# The peer bench/peers.py measures against; bench-only, never the package's dependencies.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) bench/requirements.txt
	$(VENV)/bin/uv pip install -q --python $(PY) -r bench/requirements.txt
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) bench/run_all.py

# The randomized reliability suite at soak strength: >= 2,000 schedules per store (memory,
# filesystem, AWS on moto) plus SIGKILL schedules; prints schedules, crash points, faults fired, violations.
soak: $(STAMP)
	rm -rf .soak && mkdir .soak
	ARCHMAX_RELIABILITY_PROFILE=soak ARCHMAX_RELIABILITY_COUNTS_DIR=.soak $(PY) -m pytest -n 5 \
		tests/reliability/test_schedules.py tests/reliability/test_sigkill.py; \
	status=$$?; $(PY) tests/reliability/summary.py .soak; exit $$status

clean:
	rm -rf $(VENV) sessions demo-sessions .soak
