# Two commands do all the set-up on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TORCH_VERSION := 2.13.0

.PHONY: install serve test lint typecheck bench clean

# torch is pinned and installed first: a looser spec would pull several GB of CUDA wheels.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==$(TORCH_VERSION)
	$(BIN)/pip install --quiet -e '.[dev,local-embeddings]'
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/kodiai serve

test: $(STAMP)
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
