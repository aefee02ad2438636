# `make demo` and `make test` bootstrap .venv themselves on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench soak fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check uv
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[dev,aws]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile

# The gates CI runs before the suite (issue 23), in order, stopping at the first that fails.
# Complexity: no function worse than C (radon cc <= 20), no module whose average is worse than
# B, and the package's average A. Import contracts: .importlinter or pyproject's [tool.importlinter].
LINT_PATHS := runtime tests bench functions
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	$(VENV)/bin/mypy
	$(VENV)/bin/xenon --max-absolute C --max-modules B --max-average A runtime/archmax
	@if [ -f .importlinter ] || grep -q '^\[tool\.importlinter' pyproject.toml; then \
		$(VENV)/bin/lint-imports; \
	else \
		echo "lint-imports: skipped, no contracts yet (.importlinter or [tool.importlinter])"; \
	fi

# The peer bench/peers.py measures against; bench-only, never the package's dependencies.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) bench/requirements.txt
	$(VENV)/bin/uv pip install -q --python $(PY) -r bench/requirements.txt
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) bench/run_all.py

# The randomized reliability suite at soak strength: >= 2,000 schedules per store (memory,
# filesystem, AWS on moto) plus SIGKILL schedules; prints schedules, crash points, faults fired, violations
# (and the first violations' texts). Each failed test's report (its falsifying schedule) is written to
# .soak/failures.txt as it fails, not after the hours the other stores still take; -x schedules no test
# after the first failure (the tests already running finish first).
soak: $(STAMP)
	rm -rf .soak && mkdir .soak
	ARCHMAX_RELIABILITY_PROFILE=soak ARCHMAX_RELIABILITY_COUNTS_DIR=.soak $(PY) -m pytest -n 5 -x \
		tests/reliability/test_schedules.py tests/reliability/test_pair_schedules.py tests/reliability/test_sigkill.py; \
	status=$$?; $(PY) tests/reliability/summary.py .soak; exit $$status

# Forged events through every Lambda handler on moto (issue 21: 0 5xx over >= 10,000 events, refusals
# write nothing); prints events per handler and answers per status. ARCHMAX_FUZZ_EXAMPLES sets the
# examples per test (the profile's default splits 10,000 over the module's tests).
fuzz: $(STAMP)
	ARCHMAX_FUZZ_PROFILE=fuzz $(PY) -m pytest -p no:xdist -p no:logging -q tests/adversarial/test_fuzz_forged.py

clean:
	rm -rf $(VENV) sessions demo-sessions .soak
