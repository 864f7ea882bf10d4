"""The prompt and Review Details built from the real neighbouring modules' outputs.

Config from ``parse_repo_config``, diff analysis from ``analyze_diff``, triage from ``file_risk``, the
profile from ``profiles``, retrieval results as ``RerankedResult`` with ``learning.confidence`` labels.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kodiai.config import parse_repo_config
from kodiai.learning.confidence import confidence_labels
from kodiai.learning.types import LearningMemoryRecord, RerankedResult
from kodiai.review.details import ReviewDetailsInput, format_review_details_summary
from kodiai.review.diff_analysis import analyze_diff, parse_numstat_per_file
from kodiai.review.file_risk import compute_file_risk_scores, triage_files_by_risk
from kodiai.review.profiles import resolve_review_profile
from kodiai.review.prompt import (
    ReviewPromptContext,
    build_retrieval_context,
    build_review_prompt,
    match_path_instructions,
)

YAML = """
review:
  maxComments: 4
  minConfidence: 35
  severity:
    minLevel: medium
  suppressions:
    - missing JSDoc
    - pattern: "glob:*legacy*"
      severity: [minor]
      paths: ["src/**"]
  pathInstructions:
    - path: "src/api/**"
      instructions: Check authorization on every handler.
    - path: ["docs/**", "!docs/internal/**"]
      instructions: Docs must match the code.
knowledge:
  retrieval:
    maxContextChars: 900
"""

FILES = [
    "src/api/auth.ts",
    "src/api/users.py",
    "docs/guide.md",
    "docs/internal/notes.md",
    "tests/auth.test.ts",
]
NUMSTAT = [
    "30\t2\tsrc/api/auth.ts",
    "12\t0\tsrc/api/users.py",
    "5\t5\tdocs/guide.md",
    "1\t0\tdocs/internal/notes.md",
    "40\t0\ttests/auth.test.ts",
]


def memory(i: int, distance: float) -> RerankedResult:
    record = LearningMemoryRecord(
        repo="acme/repo",
        owner="acme",
        finding_id=i,
        review_id=1,
        source_repo="acme/repo",
        finding_text=f"Missing authorization check {i}",
        severity="major",
        category="security",
        file_path=f"src/api/h{i}.ts",
        outcome="accepted",
        embedding_model="m",
        embedding_dim=1024,
    )
    return RerankedResult(
        memory_id=i,
        distance=distance,
        record=record,
        source_repo="acme/repo",
        adjusted_distance=distance,
        language_match=True,
    )


def test_prompt_from_real_module_outputs() -> None:
    config = parse_repo_config(YAML).config
    review = config.review
    analysis = analyze_diff({"changed_files": FILES, "numstat_lines": NUMSTAT})
    results = [memory(i, d) for i, d in enumerate([0.2, 0.35, 0.9])]
    labels = confidence_labels([r.distance for r in results])
    retrieval = build_retrieval_context(results, labels, config.knowledge.retrieval.max_context_chars)
    ctx = ReviewPromptContext(
        owner="acme",
        repo="repo",
        pr_number=12,
        pr_title="feat: auth",
        pr_author="alice",
        base_branch="main",
        head_branch="feat/auth",
        changed_files=FILES,
        custom_instructions=review.prompt,
        mode=review.mode,
        severity_min_level=review.severity.min_level,
        focus_areas=review.focus_areas,
        ignored_areas=review.ignored_areas,
        max_comments=review.max_comments,
        suppressions=review.suppressions,
        min_confidence=review.min_confidence,
        diff_analysis=analysis,
        matched_path_instructions=match_path_instructions(review.path_instructions, FILES),
        retrieval_context=retrieval,
        files_by_language=analysis.files_by_language,
        output_language=review.output_language,
    )
    prompt = build_review_prompt(ctx)
    assert "Post at most 4 inline comments for this PR review." in prompt
    assert "Only report findings at these severity levels: critical, major, medium." in prompt
    assert "- pattern: glob:*legacy* (severity=[minor]; paths=[src/**])" in prompt
    assert "Findings below 35% confidence" in prompt
    assert "**src/api/** (applies to: src/api/auth.ts, src/api/users.py)" in prompt
    assert "**docs/**, !docs/internal/** (applies to: docs/guide.md)" in prompt
    assert "This PR modifies 5 files (+88 / -7 lines)." in prompt
    assert "### Python (1 file(s))" in prompt
    section = prompt[prompt.index("## Similar Prior Findings") :].split("\n\n## ")[0]
    assert len(section) <= 900
    assert f"distance: 0.200, confidence: {labels[0]})" in section
    assert labels[0] == "high"


def test_review_details_from_real_triage_and_profile() -> None:
    files = [f"src/f{i:02d}.ts" for i in range(12)]
    numstat = [f"{i + 1}\t0\t{f}" for i, f in enumerate(files)]
    analysis = analyze_diff({"changed_files": files, "numstat_lines": numstat})
    scores = compute_file_risk_scores(
        files=files,
        per_file_stats=parse_numstat_per_file(numstat),
        files_by_category=analysis.files_by_category,
    )
    tiers = triage_files_by_risk(
        risk_scores=scores, file_threshold=10, full_review_count=5, abbreviated_count=3
    )
    profile = resolve_review_profile(keyword_profile_override=None, manual_profile=None, lines_changed=78)
    text = format_review_details_summary(
        ReviewDetailsInput(
            review_output_key="k",
            files_reviewed=analysis.metrics.total_files,
            lines_added=analysis.metrics.total_lines_added,
            lines_removed=analysis.metrics.total_lines_removed,
            profile=profile,
            completed_at=datetime(2026, 1, 1, tzinfo=UTC),
            triage=tiers,
        )
    )
    assert "- Profile: strict (auto, lines changed: 78)" in text
    assert "- Review scope: Reviewed 8/12 files, prioritized by risk" in text
    assert "- Full review: 5 files | Abbreviated review: 3 files | Not reviewed: 4 files" in text
    listed = [line for line in text.split("\n") if line.startswith("- src/") and "(risk: " in line]
    assert [line.split(" ")[1] for line in listed] == [s.file_path for s in tiers.mention_only]


def test_build_retrieval_context_shapes_and_errors() -> None:
    """R1 step 32.8: the adjusted distance is shown; labels must pair one-to-one with results."""
    import pytest

    results = [memory(1, 0.4).model_copy(update={"adjusted_distance": 0.25})]
    ctx = build_retrieval_context(results)
    assert ctx is not None
    assert ctx.findings[0].distance == 0.25
    assert ctx.findings[0].confidence is None
    assert ctx.findings[0].source_repo == "acme/repo"
    assert ctx.max_context_chars == 2000
    assert build_retrieval_context([]) is None
    with pytest.raises(ValueError, match="2 confidence labels for 1"):
        build_retrieval_context(results, ["high", "low"])


def test_dep_bump_section_with_real_scope_and_usage_models() -> None:
    """RP-101/RP-102 with the objects library A produces (``UsageEvidence``, ``ScopeGroup``)."""
    from kodiai.handler_kit.usage import parse_git_grep_output
    from kodiai.review.scope import detect_scope_coordination

    groups = detect_scope_coordination(["@babel/parser", "@babel/core", "lodash", "@types/node"])
    evidence = parse_git_grep_output(
        "src/index.ts:1:import { merge } from 'lodash'\nsrc/a.ts:12:  merge(`x`)\n"
    )
    prompt = build_review_prompt(
        {
            "owner": "acme",
            "repo": "repo",
            "pr_number": 1,
            "pr_title": "Bump the babel group",
            "pr_author": "dependabot[bot]",
            "base_branch": "main",
            "head_branch": "dependabot/npm_and_yarn/babel",
            "dep_bump_context": {
                "detection": {"source": "dependabot", "signals": ["sender"]},
                "details": {"package_name": None, "is_group": True, "ecosystem": "npm"},
                "classification": {"bump_type": "unknown", "is_breaking": False},
                "usage_evidence": {"evidence": evidence, "timed_out": False},
                "scope_groups": groups,
            },
        }
    )
    assert "- @babel: @babel/core, @babel/parser" in prompt
    assert "- `src/index.ts:1` -- `import { merge } from 'lodash'`" in prompt
    assert "- `src/a.ts:12` -- `merge('x')`" in prompt


def test_dep_bump_and_intent_from_real_library_models() -> None:
    """RP-098 and R3.4/R3.5 fed by ``dep_bump``, ``merge_confidence`` and ``pr_intent`` as the handler would."""
    from kodiai.review.dep_bumps.detect import classify_dep_bump, detect_dep_bump, extract_dep_bump_details
    from kodiai.review.dep_bumps.merge_confidence import DepBumpContext, compute_merge_confidence
    from kodiai.review.posted_texts import build_approval_body
    from kodiai.review.pr_intent import build_keyword_parsing_section, parse_pr_intent

    title = "Bump @angular/core from 15.2.0 to 16.0.0"
    branch = "dependabot/npm_and_yarn/angular/core-16.0.0"
    detection = detect_dep_bump(
        pr_title=title, pr_labels=["dependencies"], head_branch=branch, sender_login="dependabot[bot]"
    )
    assert detection is not None
    details = extract_dep_bump_details(
        detection=detection, pr_title=title, pr_body="", changed_files=["package.json"], head_branch=branch
    )
    ctx = DepBumpContext(
        detection=detection,
        details=details,
        classification=classify_dep_bump(details.old_version, details.new_version),
    )
    ctx.merge_confidence = compute_merge_confidence(ctx)
    intent = parse_pr_intent(title="[strict-review] [perf] feat!: faster", body="", commits=[])
    prompt = build_review_prompt(
        {
            "owner": "acme",
            "repo": "repo",
            "pr_number": 2,
            "pr_title": title,
            "pr_author": "dependabot[bot]",
            "base_branch": "main",
            "head_branch": branch,
            "dep_bump_context": ctx,
            "focus_hints": intent.unrecognized,
            "conventional_type": intent.conventional_type,
        }
    )
    assert "- **Package:** @angular/core" in prompt
    assert "- **Version:** 15.2.0 → 16.0.0" in prompt
    assert "**⚠ MAJOR version bump — potential breaking changes.**" in prompt
    assert "**Merge Confidence: :yellow_circle: Review Recommended**" in prompt
    assert "- Major version bump (potential breaking changes)" in prompt
    assert "- [PERF]" in prompt
    assert "**BREAKING CHANGE indicated.**" in prompt
    approval = build_approval_body("k", ctx.merge_confidence)
    assert approval.endswith(
        ":yellow_circle: **Merge Confidence: Review Recommended** \u2014 Major version bump (potential breaking changes)"
    )
    text = format_review_details_summary(
        ReviewDetailsInput(
            review_output_key="k",
            files_reviewed=1,
            lines_added=2,
            lines_removed=2,
            completed_at=datetime(2026, 1, 1, tzinfo=UTC),
            keyword_parsing=build_keyword_parsing_section(intent),
        )
    )
    assert "- Keyword parsing:\n  - recognized: [STRICT-REVIEW] in title" in text


def test_incremental_and_delta_contexts_from_prior_findings() -> None:
    """R1 step 36: the prior-finding context (library B) feeds the incremental and delta sections as is."""
    from kodiai.review.dedup import build_prior_finding_context
    from kodiai.review.delta import PriorFinding

    prior = [
        PriorFinding(
            file_path="src/auth.ts",
            title="SQL injection in login query",
            title_fingerprint="fp-1",
            severity="critical",
            category="security",
        ),
        PriorFinding(
            file_path="src/db.ts",
            title="Connection pool leak",
            title_fingerprint="fp-2",
            severity="major",
            category="performance",
        ),
    ]
    context = build_prior_finding_context(
        prior_findings=prior, changed_files_since_last_review=["src/auth.ts"]
    )
    prompt = build_review_prompt(
        {
            "owner": "acme",
            "repo": "repo",
            "pr_number": 4,
            "pr_title": "t",
            "pr_author": "a",
            "base_branch": "main",
            "head_branch": "h",
            "changed_files": ["src/auth.ts"],
            "incremental_context": {
                "last_reviewed_head_sha": "abc1234ffff",
                "changed_files_since_last_review": ["src/auth.ts"],
                "unresolved_prior_findings": context.unresolved_on_unchanged_code,
            },
            "delta_context": {
                "last_reviewed_head_sha": "abc1234ffff",
                "changed_files_since_last_review": ["src/auth.ts"],
                "prior_findings": prior,
            },
        }
    )
    assert '- [major] "Connection pool leak" ("src/db.ts")' in prompt
    assert '- [CRITICAL] "src/auth.ts": "SQL injection in login query"' in prompt
    assert "Prior review findings (2):" in prompt
