"""``kodiai review`` internals on a real temporary git repository: context building (diff, config,
analysis, retrieval against a real LanceDB store) and a full run through the scripted transport with
GitHub replaced by the recorder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kodiai.execution.options import ModelCredentials
from kodiai.execution.review_output import build_review_output_marker
from kodiai.learning.embeddings import NoopEmbeddingProvider
from kodiai.learning.setup import open_store_for_provider
from kodiai.learning.types import LearningMemoryRecord
from kodiai.review.local_branch import (
    LocalReviewError,
    build_local_review,
    local_output_key,
    run_local_review,
)
from support.git_tool_calls import run_git_tool_call
from support.gitrepo import commit_files, git
from support.review_harness import FIRST_STAGE, BagOfWordsEmbedder
from support.scripted_transport import Result, ScriptedTransport, ToolCall

CONFIG = """review:
  maxComments: 4
  pathInstructions:
    - path: "src/**"
      instructions: Check error handling on every retry.
"""


def make_repo(tmp_path: Path, *, config: str = CONFIG) -> Path:
    repo = tmp_path / "widgets"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("remote", "add", "origin", "git@github.com:acme/widgets.git", cwd=repo)
    commit_files(repo, {"src/payments.py": "def pay():\n    return 1\n", ".kodiai.yml": config}, "initial")
    git("checkout", "-q", "-b", "feature", cwd=repo)
    commit_files(
        repo,
        {
            "src/payments.py": "def pay():\n    for attempt in range(3):\n        retry()\n    return 1\n",
            "tests/test_payments.py": "def test_pay():\n    assert pay() == 1\n",
        },
        "feat: retry payments\n\nRetries the payment call three times.",
    )
    return repo


async def test_context_from_real_git_without_store(tmp_path: Path) -> None:
    """Diff base...head, head's config, analysis and prompt; a missing store skips retrieval."""
    repo = make_repo(tmp_path)
    review = await build_local_review(
        repo,
        "main",
        "feature",
        embedder_factory=NoopEmbeddingProvider,
        memory_uri=str(tmp_path / "none.lance"),
    )
    assert (review.owner, review.repo, review.title) == ("acme", "widgets", "feat: retry payments")
    assert review.changed_files == ["src/payments.py", "tests/test_payments.py"]
    assert review.retrieval.status == "no-store"
    assert review.profile == "strict"
    assert review.prompt.startswith("You are reviewing pull request #0 in acme/widgets.")
    assert "Title: feat: retry payments" in review.prompt
    assert "Retries the payment call three times." in review.prompt
    assert "Post at most 4 inline comments" in review.prompt
    assert "Check error handling on every retry." in review.prompt
    assert "## Similar Prior Findings" not in review.prompt
    assert 30 <= review.timeout_seconds <= 1800


async def test_prompt_git_calls_run_in_the_local_checkout(tmp_path: Path) -> None:
    """The "Reading the code" calls name a range that exists where the model runs (no origin/main here):
    both succeed through the git tools in the checkout and show the reviewed change."""
    repo = make_repo(tmp_path)
    review = await build_local_review(repo, "main", "feature", embedder_factory=NoopEmbeddingProvider)
    calls = re.findall(r"^- `(mcp__git__(diff|log) [^`]+)`$", review.prompt, flags=re.MULTILINE)
    assert [kind for _call, kind in calls] == ["diff", "log"]
    assert f'"{review.base_sha}...{review.head_sha}"' in calls[0][0]
    failed, diff = await run_git_tool_call(repo, calls[0][0])
    assert not failed and "retry()" in diff
    failed, log = await run_git_tool_call(repo, calls[1][0])
    assert not failed and "src/payments.py" in log


@pytest.mark.parametrize(
    ("extra_config", "method_family"),
    [
        ("", "stages"),  # the default chain: the embedder's profile (scale-free headgap), then the stages
        # the cut alone (unknown model → scale-free headgap)
        (FIRST_STAGE, "headgap"),
        ("knowledge:\n  retrieval:\n    cutStrategy: maxgap\n", "maxgap"),
    ],
)
async def test_retrieval_against_real_lancedb_store(
    tmp_path: Path, extra_config: str, method_family: str
) -> None:
    """Memories of this repo in a LanceDB directory are retrieved, cut by the configured strategy and put
    into the prompt."""
    repo = make_repo(tmp_path, config=CONFIG + extra_config)
    uri = str(tmp_path / "memory.lance")
    embedder = BagOfWordsEmbedder()
    store = open_store_for_provider(uri, embedder)  # the table `kodiai memory import` writes
    assert store is not None
    text = "retry payments payment call retries python src/payments.py tests/test_payments.py feat"
    for i, (finding, repo_name) in enumerate(
        [(text, "acme/widgets"), ("unrelated css colour tweak in docs", "acme/widgets"), (text, "other/repo")]
    ):
        record = LearningMemoryRecord(
            repo=repo_name,
            owner=repo_name.split("/")[0],
            finding_id=i + 1,
            review_id=1,
            source_repo=repo_name,
            finding_text=finding,
            severity="major",
            category="correctness",
            file_path="src/payments.py",
            outcome="accepted",
            embedding_model=embedder.model,
            embedding_dim=embedder.dimensions,
        )
        vector = embedder.generate(finding, "document")
        assert vector is not None
        store.write_memory(record, vector)
    store.close()

    review = await build_local_review(
        repo, "main", "feature", embedder_factory=BagOfWordsEmbedder, memory_uri=uri
    )
    assert review.retrieval.status == "used"
    method = review.retrieval.threshold_method or ""
    if method_family == "stages":
        assert method == "rank:kept"  # the memory is on src/payments.py, the file the branch changes
    elif method_family == "headgap":
        assert method.startswith("headgap:")
    else:
        assert method in ("adaptive", "percentile", "configured")
    assert review.retrieval.query and "retry payments" in review.retrieval.query
    assert [m.finding_text for m in review.retrieval.results][:1] == [text]
    assert all(m.source_repo == "acme/widgets" for m in review.retrieval.results)
    assert "## Similar Prior Findings (Learning Context)" in review.prompt
    assert text in review.prompt


async def test_errors_are_clear(tmp_path: Path) -> None:
    """Unknown refs, a non-repository and an invalid head .kodiai.yml raise LocalReviewError."""
    repo = make_repo(tmp_path)
    with pytest.raises(LocalReviewError, match="base ref 'nope'"):
        await build_local_review(repo, "nope", "feature", embedder_factory=NoopEmbeddingProvider)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(LocalReviewError):
        await build_local_review(plain, "main", embedder_factory=NoopEmbeddingProvider)
    commit_files(repo, {".kodiai.yml": "review: [unclosed\n"}, "break config")
    with pytest.raises(LocalReviewError, match=r"Invalid \.kodiai\.yml"):
        await build_local_review(repo, "main", "feature", embedder_factory=NoopEmbeddingProvider)


async def test_run_records_instead_of_posting(tmp_path: Path) -> None:
    """Without --dry-run the executor runs (scripted transport here) and the tools' output is recorded
    with the review marker, validated and sanitised exactly as on GitHub."""
    repo = make_repo(tmp_path)
    review = await build_local_review(repo, "main", "feature", embedder_factory=NoopEmbeddingProvider)
    transport = ScriptedTransport(
        [
            ToolCall(
                "github_inline_comment",
                "create_inline_comment",
                {"path": "src/payments.py", "line": 3, "body": "[MAJOR] Retry without backoff @kodiai"},
            ),
            ToolCall(
                "github_comment",
                "create_comment",
                {
                    "issueNumber": 0,
                    "body": "<details>\n<summary>Kodiai Review Summary</summary>\n\nbad\n</details>",
                },
            ),
            Result(),
        ]
    )
    result, recorder = await run_local_review(
        review, repo, credentials=ModelCredentials(), transport_factory=lambda _o: transport
    )
    assert result.conclusion == "success" and result.published is True
    assert transport.prompt == review.prompt
    marker = build_review_output_marker(local_output_key(review))
    assert [c["body"] for c in recorder.review_comments] == [
        f"[MAJOR] Retry without backoff kodiai\n\n{marker}"
    ]
    assert recorder.review_comments[0]["commit_id"] == review.head_sha
    assert recorder.issue_comments == []
    assert transport.tool_calls[1].is_error and "missing required section" in transport.tool_calls[1].text


async def test_a_symlinked_or_oversized_config_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """As the webhook's workspace read: the head's .kodiai.yml as a symbolic link, or over the size limit,
    is a clear error decided from the tree entry, never read."""
    from kodiai.config.loader import MAX_CONFIG_BYTES

    repo = make_repo(tmp_path)
    (repo / ".kodiai.yml").unlink()
    (repo / ".kodiai.yml").symlink_to("/dev/zero")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "link the config", cwd=repo)
    with pytest.raises(LocalReviewError, match="symbolic link"):
        await build_local_review(repo, "main", "feature", embedder_factory=NoopEmbeddingProvider)
    (repo / ".kodiai.yml").unlink()
    commit_files(repo, {".kodiai.yml": "#" * (MAX_CONFIG_BYTES + 1) + "\n"}, "huge config")
    with pytest.raises(LocalReviewError, match="larger than"):
        await build_local_review(repo, "main", "feature", embedder_factory=NoopEmbeddingProvider)
