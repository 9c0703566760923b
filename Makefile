# Two commands for a newcomer: `make demo` and `make test`. Each bootstraps .venv from
# requirements.txt. Downloads (pip wheels, Kafka jars, scenario bundles) are cached outside the
# repository, under ~/.cache (Kafka's under $KAFKA_WORKBENCH_CACHE), so later runs are fast.
# `make test` builds every scenario bundle the suite reads (beside the tests that need none) before
# the tests that read them start; .ci/run runs it on an empty KAFKA_WORKBENCH_CACHE.

PYTHON3 ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
KAFKA_WORKBENCH_CACHE ?= $(HOME)/.cache/kafka-workbench
export KAFKA_WORKBENCH_CACHE
PYTEST_ARGS ?=
# scenario builds run at once (each mostly waits on its clusters' timers)
SCENARIO_JOBS ?= 3

.PHONY: venv demo test scenarios kafka chromium lint clean notebooks

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
# exactly the set the tests read (peer.scenario.DEFAULT_SETS, every scenario on both releases)
scenarios: kafka
	$(PY) -m peer scenarios --jobs $(SCENARIO_JOBS)

# Debian's chromium for the browser tests (Playwright's own browser download is not used)
chromium:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# The suite in two parts. While the scenario bundles are built (each build mostly waits on its
# clusters' timers), the tests that need no bundle run beside them at the lowest CPU priority; then
# the tests on real Kafka's bundles (marked `kafka`, or using a bundle or cluster fixture). Both
# parts always run; make test fails when either failed or a bundle could not be built; a part that
# selects no test (pytest's exit 5) is no failure. With a `-m` of its own in PYTEST_ARGS, the
# bundles are built first and one pytest runs.
ifneq (,$(findstring -m ,$(PYTEST_ARGS)))
test: venv chromium scenarios
	$(PY) -m pytest $(PYTEST_ARGS)
else
test: venv chromium kafka
	@mkdir -p build
	@$(PY) -m peer scenarios --jobs $(SCENARIO_JOBS) > build/scenarios.log 2>&1 & builds=$$!; \
	echo "make test: scenario bundles building beside the tests that need none (log: build/scenarios.log)"; \
	nice -n 19 $(PY) -m pytest -m "not kafka" $(PYTEST_ARGS); first=$$?; \
	wait $$builds; built=$$?; \
	echo "make test: scenario bundles (exit $$built):"; cat build/scenarios.log; \
	$(PY) -m pytest -m kafka $(PYTEST_ARGS); second=$$?; \
	[ $$first -eq 5 ] && first=0; [ $$second -eq 5 ] && second=0; \
	echo "make test: tests without bundles exit $$first, scenario bundles exit $$built, tests on bundles exit $$second"; \
	[ $$first -eq 0 ] && [ $$built -eq 0 ] && [ $$second -eq 0 ]
endif

# The notebooks from their jupytext scripts, and the incident report composed from the section notebooks
notebooks: venv
	$(VENV)/bin/jupytext --quiet --to ipynb --update notebooks/[0-9][0-9]_*.py
	$(PY) -c "from workbench.report import write_composed_notebook; write_composed_notebook()"
	$(VENV)/bin/jupytext --quiet --to py:percent notebooks/incident_report.ipynb

lint: venv
	$(VENV)/bin/ruff check workbench widgets peer tests

clean:
	rm -rf build reports $(VENV)
