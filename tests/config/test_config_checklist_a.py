"""behaviour P8.1 (`execution/config.test.ts`), items 1-40, through a real `.kodiai.yml` file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kodiai.config import (
    DEFAULT_DENY_PATHS,
    RepoConfigError,
    RepoConfigResult,
    load_repo_config,
)


def load(tmp_path: Path, text: str) -> RepoConfigResult:
    (tmp_path / ".kodiai.yml").write_text(text, encoding="utf-8")
    return load_repo_config(tmp_path)


def sections(result: RepoConfigResult) -> list[str]:
    return [w.section for w in result.warnings]


def test_8_1_01_no_file_gives_full_defaults(tmp_path: Path) -> None:
    result = load_repo_config(tmp_path)
    c = result.config
    assert result.warnings == []
    assert c.model == "claude-sonnet-4-5-20250929"
    assert c.max_turns == 25
    assert c.timeout_seconds == 600
    assert c.system_prompt_append is None
    assert c.write.enabled is False
    assert c.write.allow_paths == []
    assert c.write.deny_paths == list(DEFAULT_DENY_PATHS)
    assert len(c.write.deny_paths) == 12
    assert c.write.min_interval_seconds == 0
    assert c.write.secret_scan.enabled is True
    assert c.review.enabled is True and c.review.auto_approve is True
    assert c.review.max_comments == 7 and c.review.min_confidence == 0
    assert c.mention.enabled is True and c.mention.accept_claude_alias is True
    assert c.telemetry.enabled is True and c.telemetry.cost_warning_usd == 0
    assert c.knowledge.share_global is False and c.knowledge.retrieval.top_k == 5
    assert c.language_rules.severity_floors == [] and c.language_rules.tooling_overrides == []
    assert c.language_rules.disable_builtin_floors is False


def test_8_1_02_valid_file_sets_values_and_keeps_other_defaults(tmp_path: Path) -> None:
    r = load(tmp_path, "model: claude-opus\nmaxTurns: 10\nreview:\n  autoApprove: false\n")
    assert r.warnings == []
    assert (r.config.model, r.config.max_turns, r.config.review.auto_approve) == ("claude-opus", 10, False)
    assert r.config.timeout_seconds == 600
    assert r.config.review.enabled is True
    assert r.config.write.enabled is False


def test_8_1_03_write_enabled_is_accepted(tmp_path: Path) -> None:
    r = load(tmp_path, "write:\n  enabled: true\n")
    assert r.warnings == [] and r.config.write.enabled is True


def test_8_1_04_write_policy_fields_parse(tmp_path: Path) -> None:
    r = load(
        tmp_path,
        "write:\n  minIntervalSeconds: 30\n  allowPaths: ['src/**']\n  denyPaths: ['secrets/']\n"
        "  secretScan:\n    enabled: false\n",
    )
    assert r.warnings == []
    w = r.config.write
    assert w.min_interval_seconds == 30
    assert w.allow_paths == ["src/**"]
    assert w.deny_paths == ["secrets/"]
    assert w.secret_scan.enabled is False


def test_8_1_05_unknown_write_key_dropped_without_warning(tmp_path: Path) -> None:
    r = load(tmp_path, "write:\n  enabled: true\n  bogus: 1\n")
    assert r.warnings == []
    assert "bogus" not in r.config.write.model_dump(by_alias=True)


def test_8_1_06_accept_claude_alias_defaults_true_without_mention_block(tmp_path: Path) -> None:
    assert load(tmp_path, "model: x\n").config.mention.accept_claude_alias is True


def test_8_1_07_accept_claude_alias_false_is_honoured(tmp_path: Path) -> None:
    r = load(tmp_path, "mention:\n  acceptClaudeAlias: false\n")
    assert r.config.mention.accept_claude_alias is False and r.warnings == []


def test_8_1_08_misspelled_mention_key_dropped_without_warning(tmp_path: Path) -> None:
    r = load(tmp_path, "mention:\n  acceptClaudeAlais: false\n")
    assert r.warnings == []
    assert r.config.mention.accept_claude_alias is True


def test_8_1_09_broken_yaml_rejects_with_yaml_parse_error(tmp_path: Path) -> None:
    with pytest.raises(RepoConfigError, match="YAML parse error"):
        load(tmp_path, "review:\n  enabled: [unclosed\n")


def test_8_1_10_max_turns_999_resets_with_one_warning(tmp_path: Path) -> None:
    r = load(tmp_path, "maxTurns: 999\n")
    assert r.config.max_turns == 25
    assert sections(r) == ["maxTurns"]
    assert r.warnings[0].issues == [": Too big: expected number to be <=100"]


def test_8_1_11_skip_authors_keep_bot_logins_verbatim(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  skipAuthors: ['dependabot[bot]', 'renovate[bot]']\n")
    assert r.config.review.skip_authors == ["dependabot[bot]", "renovate[bot]"]


def test_8_1_12_skip_paths_parse(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  skipPaths: ['docs/', '*.md']\n")
    assert r.config.review.skip_paths == ["docs/", "*.md"] and r.warnings == []


def test_8_1_13_review_prompt_parses_and_other_defaults_remain(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  prompt: Be terse.\n")
    assert r.config.review.prompt == "Be terse."
    assert r.config.review.enabled is True and r.config.review.max_comments == 7


def test_8_1_14_triggers_parse_and_on_synchronize_defaults_false(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  triggers:\n    onOpened: false\n")
    t = r.config.review.triggers
    assert t.on_opened is False and t.on_synchronize is False and t.on_ready_for_review is True


def test_8_1_15_omitted_triggers_block_all_true(tmp_path: Path) -> None:
    t = load(tmp_path, "review:\n  enabled: true\n").config.review.triggers
    assert (t.on_opened, t.on_ready_for_review, t.on_review_requested) == (True, True, True)


def test_8_1_16_on_review_requested_false_is_honoured(tmp_path: Path) -> None:
    t = load(tmp_path, "review:\n  triggers:\n    onReviewRequested: false\n").config.review.triggers
    assert t.on_review_requested is False and t.on_opened is True


def test_8_1_17_unknown_trigger_key_dropped_without_warning(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  triggers:\n    onClosed: true\n")
    assert r.warnings == [] and "onClosed" not in r.config.review.triggers.model_dump(by_alias=True)


def test_8_1_18_unknown_top_level_key_dropped_without_warning(tmp_path: Path) -> None:
    r = load(tmp_path, "fancyFeature: true\nmodel: m\n")
    assert r.warnings == [] and "fancyFeature" not in r.config.model_dump(by_alias=True)


def test_8_1_19_unknown_nested_review_key_dropped_without_warning(tmp_path: Path) -> None:
    # The original's own .kodiai.yml has `review.onSynchronize`, which is ignored.
    r = load(tmp_path, "review:\n  onSynchronize: true\n")
    assert r.warnings == [] and r.config.review.triggers.on_synchronize is False


def test_8_1_20_unknown_secret_scan_key_dropped_without_warning(tmp_path: Path) -> None:
    r = load(tmp_path, "write:\n  secretScan:\n    enabled: false\n    entropy: 4\n")
    assert r.warnings == [] and r.config.write.secret_scan.enabled is False


def test_8_1_21_invalid_review_enabled_resets_review_keeps_write(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  enabled: 'yes'\n  maxComments: 3\nwrite:\n  enabled: true\n")
    assert sections(r) == ["review"]
    assert r.config.review.enabled is True and r.config.review.max_comments == 7
    assert r.config.write.enabled is True
    assert r.warnings[0].issues == ["enabled: Invalid input: expected boolean, received string"]


def test_8_1_22_invalid_write_enabled_resets_write_keeps_review(tmp_path: Path) -> None:
    r = load(tmp_path, "write:\n  enabled: 1\n  allowPaths: [a]\nreview:\n  maxComments: 3\n")
    assert sections(r) == ["write"]
    assert r.config.write.enabled is False and r.config.write.allow_paths == []
    assert r.config.review.max_comments == 3


def test_8_1_23_mention_enabled_42_resets_mention(tmp_path: Path) -> None:
    r = load(tmp_path, "mention:\n  enabled: 42\n  acceptClaudeAlias: false\n")
    assert sections(r) == ["mention"]
    # Security over parity (docs/parity.md, guarded settings): the original reset `enabled` to true; an
    # unreadable switch of a guarded setting fails closed (mentions off). The rest of the section resets.
    assert r.config.mention.enabled is False and r.config.mention.accept_claude_alias is True


def test_8_1_24_bad_top_level_scalar_only_resets_itself(tmp_path: Path) -> None:
    r = load(tmp_path, "model: my-model\ntimeoutSeconds: 5\n")
    assert r.config.model == "my-model" and r.config.timeout_seconds == 600
    assert sections(r) == ["timeoutSeconds"]
    assert r.warnings[0].issues == [": Too small: expected number to be >=30"]


def test_8_1_25_two_invalid_sections_give_two_warnings(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  enabled: nope\nmention:\n  enabled: 3\n")
    assert sections(r) == ["review", "mention"]


def test_8_1_26_scalar_document_gives_defaults_and_a_warning(tmp_path: Path) -> None:
    r = load(tmp_path, "hello\n")
    assert len(r.warnings) >= 1
    assert r.warnings[0].section == "root"
    assert r.warnings[0].issues == ["Config is not an object, using all defaults"]
    assert r.config.model_dump() == load_repo_config(tmp_path / "nowhere").config.model_dump()


def test_8_1_27_telemetry_fields_parse(tmp_path: Path) -> None:
    r = load(tmp_path, "telemetry:\n  enabled: false\n  costWarningUsd: 2.5\n")
    assert r.config.telemetry.enabled is False and r.config.telemetry.cost_warning_usd == 2.5


def test_8_1_28_share_global_defaults_false_and_parses_true(tmp_path: Path) -> None:
    assert load_repo_config(tmp_path).config.knowledge.share_global is False
    assert load(tmp_path, "knowledge:\n  shareGlobal: true\n").config.knowledge.share_global is True


def test_8_1_29_share_global_maybe_resets_knowledge(tmp_path: Path) -> None:
    r = load(tmp_path, "knowledge:\n  shareGlobal: maybe\n  retrieval:\n    topK: 9\n")
    assert sections(r) == ["knowledge"]
    assert r.config.knowledge.share_global is False and r.config.knowledge.retrieval.top_k == 5


def test_8_1_30_invalid_telemetry_resets_telemetry_keeps_others(tmp_path: Path) -> None:
    r = load(tmp_path, "telemetry:\n  costWarningUsd: -1\nmodel: kept\n")
    assert sections(r) == ["telemetry"]
    assert r.config.telemetry.cost_warning_usd == 0 and r.config.model == "kept"
    assert r.warnings[0].issues == ["costWarningUsd: Too small: expected number to be >=0"]


def test_8_1_31_allowed_users_defaults_to_empty(tmp_path: Path) -> None:
    assert load(tmp_path, "mention:\n  enabled: true\n").config.mention.allowed_users == []


def test_8_1_32_allowed_users_parses(tmp_path: Path) -> None:
    r = load(tmp_path, "mention:\n  allowedUsers: [alice, Bob]\n")
    assert r.config.mention.allowed_users == ["alice", "Bob"]


def test_8_1_33_conversation_defaults(tmp_path: Path) -> None:
    conv = load(tmp_path, "mention:\n  enabled: true\n").config.mention.conversation
    assert (conv.max_turns_per_pr, conv.context_budget_chars) == (10, 8000)


def test_8_1_34_custom_conversation_values(tmp_path: Path) -> None:
    text = "mention:\n  conversation:\n    maxTurnsPerPr: 5\n    contextBudgetChars: 4000\n"
    conv = load(tmp_path, text).config.mention.conversation
    assert (conv.max_turns_per_pr, conv.context_budget_chars) == (5, 4000)


def test_8_1_35_partial_conversation_fills_default(tmp_path: Path) -> None:
    conv = load(tmp_path, "mention:\n  conversation:\n    maxTurnsPerPr: 4\n").config.mention.conversation
    assert (conv.max_turns_per_pr, conv.context_budget_chars) == (4, 8000)


def test_8_1_36_conversation_below_minimum_resets_whole_mention(tmp_path: Path) -> None:
    text = "mention:\n  enabled: false\n  conversation:\n    maxTurnsPerPr: 0\n    contextBudgetChars: 999\n"
    r = load(tmp_path, text)
    assert sections(r) == ["mention"]
    # Security over parity (docs/parity.md, guarded settings): the original reset the written
    # `enabled: false` to true with the rest of the section; a valid restriction is kept.
    assert r.config.mention.enabled is False
    assert r.config.mention.conversation.max_turns_per_pr == 10
    assert r.warnings[0].issues == [
        "conversation.maxTurnsPerPr: Too small: expected number to be >=1",
        "conversation.contextBudgetChars: Too small: expected number to be >=1000",
    ]


def test_8_1_37_conversation_above_maximum_resets(tmp_path: Path) -> None:
    text = "mention:\n  conversation:\n    maxTurnsPerPr: 51\n    contextBudgetChars: 50001\n"
    r = load(tmp_path, text)
    assert sections(r) == ["mention"]
    assert r.config.mention.conversation.max_turns_per_pr == 10
    assert r.warnings[0].issues == [
        "conversation.maxTurnsPerPr: Too big: expected number to be <=50",
        "conversation.contextBudgetChars: Too big: expected number to be <=50000",
    ]


def test_8_1_38_review_mode_enhanced_parses(tmp_path: Path) -> None:
    assert load(tmp_path, "review:\n  mode: enhanced\n").config.review.mode == "enhanced"


def test_8_1_39_severity_min_level_major_parses(tmp_path: Path) -> None:
    assert (
        load(tmp_path, "review:\n  severity:\n    minLevel: major\n").config.review.severity.min_level
        == "major"
    )


def test_8_1_40_focus_areas_parse(tmp_path: Path) -> None:
    r = load(tmp_path, "review:\n  focusAreas: [security, performance]\n")
    assert r.config.review.focus_areas == ["security", "performance"]
