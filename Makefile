# paralab: `make serve` installs and serves; `make test` installs and runs every test.
PYTHON ?= python3
# `make test` runs on this many pytest-xdist workers, each module's tests on one worker (tests/conftest.py
# groups them); 1 runs it in this process, as plain pytest does. Much of the suite
# waits (on ranks, a hang's timeout, a judgment, a Ray cluster) while the other worker computes: on two
# cores two workers beat one, and a third was no faster on an idle machine, both cores already busy
# (docs/benchmarks.md, "The test suite on two cores").
TEST_WORKERS ?= 2
FAST_WORKERS ?= 2
xdist = $(if $(filter 1,$(1)),,-n $(1) --dist loadgroup)
PIP = $(PYTHON) -m pip
TORCH_CPU = torch==2.13.0

.PHONY: install install-test system-deps serve test test-fast readme bench

install:
	$(PIP) install -q $(TORCH_CPU) || $(PIP) install -q torch
	$(PIP) install -q -e .

install-test: install
	$(PIP) install -q -e '.[test]'

# Debian's Chromium headless shell for the Playwright tests (never `playwright install`: it downloads a
# browser), bubblewrap for the judge's sandbox, docker-compose to validate docker-compose.yml.
system-deps:
	@(command -v chromium-headless-shell && command -v bwrap && command -v docker-compose) >/dev/null || (apt-get update -q && apt-get install -y -q chromium-headless-shell bubblewrap docker-compose)

serve: install
	$(PYTHON) -m app

test: install-test system-deps
	$(PYTHON) -m pytest -q $(call xdist,$(TEST_WORKERS))

# The loop to run every few minutes: no browser, no sandbox, nothing slow (markers: pyproject.toml).
test-fast:
	$(PYTHON) -m pytest -q $(call xdist,$(FAST_WORKERS)) -m "not browser and not sandbox and not slow"

# Rewrites the README's lesson table from the lessons' titles and summaries.
readme:
	$(PYTHON) -m tests.test_docs

bench: install
	$(PYTHON) bench/run_latency.py && $(PYTHON) bench/tracing_overhead.py && $(PYTHON) bench/call_timing.py && $(PYTHON) bench/room_followers.py
