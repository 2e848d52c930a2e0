# The two commands of the README. Both set up .venv on first use (CPU torch first, so pip never
# pulls a CUDA build), then run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.sparring-installed

.PHONY: demo test docs install clean

install: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,league,openspiel,pettingzoo,atari,mujoco,export,ray,tensorboard,perfect,dev,docs]'
	touch $(STAMP)

demo: $(STAMP)
	rm -rf runs/connect_four_demo  # a new run each time (a run refuses a directory holding an earlier one)
	$(PY) -m sparring.framework.cli train dizoo/board_games/config/connect_four_demo.py

# The suite in TEST_WORKERS processes (pytest-xdist): most tests are one Python thread, or processes that wait on
# each other, so two keep both cores busy. Tests marked `alone` (a Ray cluster of their own) then run in one
# process with nothing beside them. Both parts run; either failing fails the target. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) -m "not alone"; shared=$$?; \
	$(PY) -m pytest -m alone; alone=$$?; \
	test $$shared -eq 0 && test $$alone -eq 0

# The loop to run while editing: every test not marked slow (pytest.ini says what slow means).
.PHONY: test-fast
test-fast: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) -m "not slow and not alone"

.PHONY: lint typecheck
lint: $(STAMP)  # settings in pyproject.toml ([tool.ruff])
	$(PY) -m ruff check .

typecheck: $(STAMP)  # settings and the folders checked in pyproject.toml ([tool.mypy])
	$(PY) -m mypy

# The documentation site, into site/; --strict turns a broken link or a missing reference into a failure.
docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf runs site .pytest_cache .mypy_cache .ruff_cache build *.egg-info
