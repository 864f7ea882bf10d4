"""RV-51 and RV-52 (behaviour R4.1): a Dependabot bump gets release notes, breaking changes and the
workspace's usage evidence in its prompt. The npm registry is faked (it is an outside service), GitHub's
releases come from the fake GitHub, the usage scan is the real ``git grep`` in the clone."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import APIRouter

from kodiai.handler_kit.usage_scan import UsageAnalysisResult, analyze_package_usage
from support.fake_github import FakeGitHub
from support.fake_github_pr import PrState
from support.review_harness import ReviewHarness

LODASH_RELEASES = [
    {"tag_name": "v4.17.21", "draft": False, "body": "BREAKING CHANGES:\n- `merge()` removed\n"},
    {"tag_name": "v4.17.20", "draft": False, "body": "Fixes."},
]


def npm_registry() -> httpx.Client:
    """registry.npmjs.org as far as these tests need it: lodash's repository is lodash/lodash."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.host == "registry.npmjs.org" and request.url.path == "/lodash/latest":
            return httpx.Response(
                200,
                json={"name": "lodash", "repository": {"url": "git+https://github.com/lodash/lodash.git"}},
            )
        return httpx.Response(404, json={"error": "Not found"})

    return httpx.Client(transport=httpx.MockTransport(answer))


@pytest.fixture(scope="module", autouse=True)
def lodash_on_fake_github(fake_server: tuple[FakeGitHub, PrState]) -> Iterator[None]:
    fake, _state = fake_server
    router = APIRouter()

    @router.get("/repos/lodash/lodash/releases")
    async def releases(page: int = 1) -> list[dict[str, Any]]:
        return LODASH_RELEASES if page == 1 else []

    @router.get("/advisories")
    async def advisories() -> list[dict[str, Any]]:
        return []

    fake.register(router)
    yield


class RecordingAnalyzer:
    """The real usage scan, remembering its arguments (the original injected a usage analyzer)."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[tuple[str, Sequence[str], str | None, float]] = []
        self.fail = fail

    async def __call__(
        self, workspace: str, package: str, snippets: Sequence[str], ecosystem: str | None, budget_ms: float
    ) -> UsageAnalysisResult:
        self.calls.append((package, list(snippets), ecosystem, budget_ms))
        if self.fail:
            raise RuntimeError("git grep exploded")
        return await analyze_package_usage(workspace, package, snippets, ecosystem, budget_ms)


def dependabot_pr(h: ReviewHarness) -> dict[str, Any]:
    return h.open_pr(
        base_files={
            "src/index.ts": 'import { merge } from "lodash";\nexport const m = merge({}, {});\n',
            "package.json": '{"dependencies": {"lodash": "4.17.20"}}\n',
        },
        head_files={"package.json": '{"dependencies": {"lodash": "4.17.21"}}\n'},
        branch="dependabot/npm_and_yarn/lodash-4.17.21",
        title="Bump lodash from 4.17.20 to 4.17.21",
        author="dependabot[bot]",
        labels=["dependencies"],
    )


def harness_with(tmp_path: Path, harness: ReviewHarness, analyzer: RecordingAnalyzer) -> ReviewHarness:
    return ReviewHarness(
        tmp_path / "dep",
        harness.fake,
        harness.state,
        bot_allow_list=["dependabot"],
        registry=npm_registry,
        usage_analyzer=analyzer,
    )


async def test_rv_51_dependabot_bump_gets_usage_evidence(tmp_path: Path, harness: ReviewHarness) -> None:
    analyzer = RecordingAnalyzer()
    h = harness_with(tmp_path, harness, analyzer)
    try:
        await h.deliver(dependabot_pr(h))
        assert len(analyzer.calls) == 1
        package, snippets, ecosystem, budget = analyzer.calls[0]
        assert (package, ecosystem, budget) == ("lodash", "npm", 3000) and snippets
        prompt = h.prompts[0]
        assert "Workspace Usage Evidence" in prompt and "`src/index.ts:1`" in prompt
        assert "`merge()` removed" in prompt
    finally:
        h.close()


async def test_rv_52_a_failing_usage_scan_leaves_the_section_out(
    tmp_path: Path, harness: ReviewHarness
) -> None:
    analyzer = RecordingAnalyzer(fail=True)
    h = harness_with(tmp_path, harness, analyzer)
    try:
        outcome = await h.deliver(dependabot_pr(h))
        assert outcome.failed == 0 and len(h.executor.contexts) == 1
        assert "Workspace Usage Evidence" not in h.prompts[0]
        assert [e["gate"] for e in h.logs if e.get("log_level") == "warning"] == ["usage-analysis"]
    finally:
        h.close()
