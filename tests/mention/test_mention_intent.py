"""Config gates, write intent and the write key/branch (behaviour E3.5 gates, E3.6)."""

from __future__ import annotations

import hashlib

import pytest
from mention_fakes import issue_comment_payload, review_comment_payload

from kodiai.config.models import MentionConfig
from kodiai.mention.intent import (
    CONFIG_SKIP_MESSAGES,
    accepted_handles,
    apply_config_gates,
    build_write_branch_name,
    build_write_output_key,
    conversation_key,
    is_write_enabled,
    parse_write_intent,
    trigger_comment_url,
    write_rate_limit_key,
)
from kodiai.mention.surface import MentionSurface, normalize_issue_comment, normalize_review_comment


def _surface(body: str, author: str = "alice", on_pr: bool = True) -> MentionSurface:
    return normalize_issue_comment(issue_comment_payload(body, on_pr=on_pr, author=author))


def _config(**values: object) -> MentionConfig:
    return MentionConfig.model_validate(values)


def test_accepted_handles() -> None:
    assert accepted_handles("kodiai") == ("kodiai", "claude")
    assert accepted_handles("kodiai", accept_claude_alias=False) == ("kodiai",)


def test_gates_pass_and_strip_the_question() -> None:
    result = apply_config_gates(_surface("@kodiai  what is this?"), _config(), "kodiai")
    assert result.skip is None and result.question == "what is this?"


def test_gate_1_mentions_disabled() -> None:
    result = apply_config_gates(_surface("@kodiai hi"), _config(enabled=False), "kodiai")
    assert result.skip == "mentions-disabled"
    assert CONFIG_SKIP_MESSAGES["mentions-disabled"] == "Mentions disabled in config, skipping"


@pytest.mark.parametrize(
    ("allowed", "author", "skip"),
    [
        (["alice", "Bob"], "alice", None),
        (["alice", "Bob"], "BOB", None),
        (["carol"], "alice", "user-not-allowlisted"),
        ([], "anyone", None),
    ],
)
def test_gate_2_allowed_users(allowed: list[str], author: str, skip: str | None) -> None:
    """Checklist 114–116 at the gate level: case-insensitive allow list, empty = everyone."""
    result = apply_config_gates(
        _surface("@kodiai hi", author=author), _config(allowedUsers=allowed), "kodiai"
    )
    assert result.skip == skip


def test_gate_3_claude_alias_opt_out() -> None:
    assert apply_config_gates(_surface("@claude hi"), _config(), "kodiai").question == "hi"
    result = apply_config_gates(_surface("@claude hi"), _config(acceptClaudeAlias=False), "kodiai")
    assert result.skip == "handle-not-accepted"
    assert (
        CONFIG_SKIP_MESSAGES["handle-not-accepted"]
        == "Mention does not match accepted handles for repo; skipping"
    )


def test_gate_3_is_a_substring_test() -> None:
    """E3.21.1: ``@kodiaibot hi`` passes and the unstripped ``@kodiaibot`` becomes part of the question."""
    assert apply_config_gates(_surface("@kodiaibot hi"), _config(), "kodiai").question == "@kodiaibot hi"


def test_gate_4_empty_question() -> None:
    result = apply_config_gates(_surface("  @kodiai  @claude "), _config(), "kodiai")
    assert result.skip == "empty-question"
    assert (
        CONFIG_SKIP_MESSAGES["empty-question"]
        == "Mention contained no question after stripping mention; skipping"
    )


@pytest.mark.parametrize(
    ("question", "keyword", "expected_request"),
    [
        ("apply: add a README", "apply", "add a README"),
        ("  Change:   rename foo  ", "change", "rename foo"),
        ("PLAN: refactor", "plan", "refactor"),
        ("apply : no space allowed", None, "apply : no space allowed"),
        ("please apply: this", None, "please apply: this"),
        ("  just a question  ", None, "just a question"),
        ("apply:", "apply", ""),
    ],
)
def test_parse_write_intent(question: str, keyword: str | None, expected_request: str) -> None:
    intent = parse_write_intent(question)
    assert (intent.keyword, intent.request) == (keyword, expected_request)
    assert intent.is_write_intent == (keyword is not None)
    assert intent.is_plan_only == (keyword == "plan")


def test_write_enabled_needs_non_plan_intent_and_config() -> None:
    assert is_write_enabled(parse_write_intent("apply: x"), True)
    assert is_write_enabled(parse_write_intent("change: x"), True)
    assert not is_write_enabled(parse_write_intent("apply: x"), False)
    assert not is_write_enabled(parse_write_intent("plan: x"), True)
    assert not is_write_enabled(parse_write_intent("x"), True)


def test_write_key_and_branch_vector() -> None:
    """E3.6 test vector: key for inst 42, acme/repo, PR 101, comment 555, apply → hash prefix bd1179769078."""
    key = build_write_output_key(
        installation_id=42, owner=" Acme ", repo="REPO", pr_number=101, comment_id=555, keyword="Apply"
    )
    assert key == "kodiai-write-output:v1:inst-42:acme/repo:pr-101:comment-555:keyword-apply"
    assert hashlib.sha256(key.encode()).hexdigest()[:12] == "bd1179769078"
    branch = build_write_branch_name(pr_number=101, comment_id=555, write_output_key=key)
    assert branch == "kodiai/apply/pr-101-comment-555-bd1179769078"


def test_trigger_url_and_keys() -> None:
    pr = _surface("@kodiai hi")
    issue = _surface("@kodiai hi", on_pr=False)
    assert trigger_comment_url(pr) == "https://github.com/acme/repo/pull/7#issuecomment-555"
    assert trigger_comment_url(issue) == "https://github.com/acme/repo/issues/7#issuecomment-555"
    inline = normalize_review_comment(review_comment_payload("@kodiai"))
    assert trigger_comment_url(inline) == "https://github.com/acme/repo/pull/101#issuecomment-900"
    assert conversation_key(inline) == "acme/repo#101"
    assert conversation_key(issue) == "acme/repo#7"
    assert write_rate_limit_key(42, "acme", "repo") == "42:acme/repo"
