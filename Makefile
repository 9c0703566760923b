# Two commands for a newcomer: `make demo` and `make test` (and `make check`, the quick loop). Each
# bootstraps .venv from requirements.txt. Downloads (pip wheels, Kafka jars, scenario bundles) are cached outside the
# repository, under ~/.cache (Kafka's under $KAFKA_WORKBENCH_CACHE), so later runs are fast.
# `make test` builds every scenario bundle the suite reads before the tests start; .ci/run runs it
# on an empty KAFKA_WORKBENCH_CACHE.

PYTHON3 ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
KAFKA_WORKBENCH_CACHE ?= $(HOME)/.cache/kafka-workbench
export KAFKA_WORKBENCH_CACHE
PYTEST_ARGS ?=
# scenario builds run at once (each mostly waits on its clusters' timers)
SCENARIO_JOBS ?= 3

.PHONY: venv demo check test test-full scenarios kafka chromium lint clean notebooks

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	$(VENV)/bin/workbench compile
	@touch $@

# The demo incident has critical findings: the report's exit code 1 (for schedulers) is not a failure here
demo: venv
	rm -rf build/demo-bundle
	$(VENV)/bin/workbench demo --out build/demo-bundle
	$(VENV)/bin/workbench report --bundle build/demo-bundle --out reports/demo/incident-report.html --fail-on never

# Real Apache Kafka from Maven Central, into $(KAFKA_WORKBENCH_CACHE)/kafka/<version>/lib
kafka: venv
	$(PY) -m peer fetch

# Incident scenarios run on real Kafka clusters on 127.0.0.1, cached per Kafka version and definition:
# exactly the set the tests read (peer.__main__.default_sets: the parametrised, era, ZooKeeper and single sets)
scenarios: kafka
	$(PY) -m peer scenarios --jobs $(SCENARIO_JOBS)

# Debian's chromium for the browser tests (Playwright's own browser download is not used)
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# The quick loop: formats on committed fixtures, analyses on inline frames, widgets headless, the
# registry, layers, docstrings, CLI checks, report composition. No Kafka (jars, clusters, bundles), no
# notebook kernel or second JVM, no browser, no large synthetic input: the tests marked kafka,
# kernel, browser, cluster or scale are not collected, and nothing is fetched or built but the venv.
# Two pytest-xdist workers, one per core (CHECK_JOBS=0: one process), an idle worker taking
# tests from the other's queue (`--dist worksteal`: a few tests take 10-30 s among a thousand of
# under a second, and xdist's default hands each worker its share up front; benchmarks/README.md).
CHECK_MARKERS := not kafka and not kernel and not browser and not cluster and not scale
CHECK_JOBS ?= 2
check: venv
	$(PY) -m pytest -m "$(CHECK_MARKERS)" -n $(CHECK_JOBS) --dist worksteal $(PYTEST_ARGS)

# The suite: every scenario bundle is built first (three at a time, nothing else running: on a
# loaded 2-core machine Kafka's clusters, MirrorMaker 2 and the clients time out, and the timing
# checks judge bundles built at a load of 15 and more), then the tests in two pytest lanes side by
# side (tests/lanes.py: the files whose tests wait on report kernels, and the rest; LANES=1 runs one
# pytest over everything). `-m "not kafka"` in PYTEST_ARGS runs the tests that need no bundle
# (tests/conftest.py marks every test using a bundle or cluster fixture `kafka`); the bundles are
# built all the same.
LANES ?= 2
# KAFKA_WORKBENCH_OLDER_RELEASE=1 (`make test-full`) also builds and tests the isr, consumer_lag and
# quorum scenarios on Kafka 3.9.2 (peer.scenario.OLDER_SCENARIOS)
export KAFKA_WORKBENCH_OLDER_RELEASE
export KAFKA_WORKBENCH_FULL
test: venv chromium scenarios
ifeq ($(LANES),1)
	$(PY) -m pytest $(PYTEST_ARGS)
else
	$(PY) -m tests.lanes $(PYTEST_ARGS)
endif

# Everything `make test` runs, the older release's scenarios with their checks, and the tests marked
# `full` (slower variants of checks make test runs once: tests/conftest.py). LANE_ONLY=main or
# LANE_ONLY=kernels runs one lane of it (tests/lanes.py): the whole takes hours on 2 cores.
LANE_ONLY ?=
test-full:
	WORKBENCH_LANE=$(LANE_ONLY) $(MAKE) test KAFKA_WORKBENCH_OLDER_RELEASE=1 KAFKA_WORKBENCH_FULL=1

# The section notebooks from their jupytext scripts (the incident report's notebook is composed
# from them by each report: workbench.report.composed_notebook)
notebooks: venv
	$(VENV)/bin/jupytext --quiet --to ipynb --update notebooks/[0-9][0-9]_*.py

lint: venv
	$(VENV)/bin/ruff check workbench widgets peer tests

clean:
	rm -rf build reports $(VENV)
