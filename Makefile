# Evidentia: `make run` starts the whole app on embedded defaults, `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PIP_QUIET := --quiet --disable-pip-version-check

.PHONY: install run prod test smoke drills chaos lint fmt clean migrate bench judge-bench

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "Python >= 3.12 is required (see .python-version); found " + sys.version.split()[0])'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing dependencies into $(VENV) ..."
	@$(BIN)/pip install $(PIP_QUIET) --upgrade pip 2>&1 | grep -v "is ignored" || true
	@# The dependencies only: the project itself is not built or installed (no editable-install
	@# banner); a .pth file puts this folder on the venv's path, so celery, gunicorn and
	@# worker processes started from anywhere import the code you are editing.
	@$(BIN)/python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["test"]))' > $(VENV)/requirements.txt
	@$(BIN)/pip install $(PIP_QUIET) -r $(VENV)/requirements.txt 2>&1 | grep -v "is ignored" || true
	@$(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "evidentia-checkout.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	@$(BIN)/python -c 'import importlib.util as u, sys; m = [n for n in ("django", "ninja", "celery", "pydantic_ai", "pytest_django", "playwright") if u.find_spec(n) is None]; sys.exit("dependency install failed, missing: " + ", ".join(m) if m else 0)'
	@touch $(STAMP)

install: $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --no-input

run: install
	@bin/run-dev

# The production profile (Procfile via honcho): PostgreSQL DATABASE_URL and Redis
# CELERY_BROKER_URL required; docs/operations.md.
prod: install
	@bin/prod

test: install
	@bin/test

# What a newcomer does, checked (docs/operations.md "Tests and CI"): make run on a free
# port and a throwaway data folder, the demo settles, a replay through the page, /ready.
smoke: install
	@$(BIN)/python bin/smoke.py

# Benchmarks (bench/README.md): PostgreSQL from DATABASE_URL (default: local db "bench",
# created and migrated) and Redis from CELERY_BROKER_URL (default: redis db 5).
bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)

# Measure the configured VALIDATOR_MODEL on the labelled judge cases (docs/validator.md);
# e.g. make judge-bench JUDGE_BENCH_ARGS="--model openai:gpt-4.1 --json var/judge.json".
judge-bench: migrate
	$(BIN)/python manage.py judge_bench $(JUDGE_BENCH_ARGS)

# Reliability and security drills, including the slow ones make test leaves out.
drills: install
	@bin/drills

# The chaos drill (issue 17, docs/operations.md "Chaos drill"): the production profile on
# its own PostgreSQL and Redis under worker kills, broker and database restarts and a
# broker outage; invariants checked, one line per scenario. CHAOS_ARGS=--short is CI's.
chaos: install
	$(BIN)/python -m chaos $(CHAOS_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf var/broker var/*.sqlite3* var/staticfiles
