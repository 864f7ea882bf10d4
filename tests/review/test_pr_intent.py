"""behaviour R4.20 (PR intent parser, PI-01…PI-31), X-41 and the JS traps of intent parsing."""

from __future__ import annotations

from kodiai.review.pr_intent import (
    DEFAULT_EMPTY_INTENT,
    BracketTag,
    BreakingChangeSource,
    CommitMessage,
    ConventionalCommitType,
    build_keyword_parsing_section,
    parse_pr_intent,
    sample_commits,
)


def _commits(messages: list[str]) -> list[CommitMessage]:
    return [CommitMessage(sha=f"sha{i:04d}", message=m) for i, m in enumerate(messages)]


def test_pi_01_wip_title_tag() -> None:
    intent = parse_pr_intent("[WIP] Fix login bug", None)
    assert intent.is_wip is True
    assert intent.bracket_tags == [BracketTag(tag="wip", recognized=True, source="title")]


def test_pi_02_security_review_focus() -> None:
    assert parse_pr_intent("Fix bug [security-review]", None).focus_areas == ["security"]


def test_pi_03_no_review() -> None:
    assert parse_pr_intent("[no-review] Docs update", None).no_review is True


def test_pi_04_style_ok() -> None:
    assert parse_pr_intent("[style-ok] Reformat", None).style_ok is True


def test_pi_05_strict_review_profile() -> None:
    assert parse_pr_intent("[strict-review] Careful", None).profile_override == "strict"


def test_pi_06_unrecognized_tag() -> None:
    intent = parse_pr_intent("[foobar] Random PR", None)
    assert intent.unrecognized == ["foobar"] and intent.recognized == []


def test_pi_07_several_recognized() -> None:
    assert parse_pr_intent("[WIP] [security-review] Fix", None).recognized == ["wip", "security-review"]


def test_pi_08_highest_profile_wins() -> None:
    assert parse_pr_intent("[STRICT-REVIEW] [minimal-review] x", None).profile_override == "strict"


def test_pi_09_case_insensitive_dedup() -> None:
    assert len(parse_pr_intent("[wip] [Wip] [WIP]", None).bracket_tags) == 1


def test_pi_10_no_tags() -> None:
    intent = parse_pr_intent("Plain title", None)
    assert intent.bracket_tags == [] and intent.recognized == [] and intent.unrecognized == []
    assert not (intent.no_review or intent.is_wip or intent.style_ok or intent.breaking_change_detected)
    assert intent.profile_override is None


def test_pi_11_conventional_feat() -> None:
    assert parse_pr_intent("feat: add user login", None).conventional_type == ConventionalCommitType(
        type="feat", is_breaking=False, source="title"
    )


def test_pi_12_fix_breaking() -> None:
    intent = parse_pr_intent("fix!: resolve crash", None)
    assert intent.conventional_type is not None and intent.conventional_type.is_breaking is True
    assert intent.breaking_change_detected is True


def test_pi_13_docs_with_scope() -> None:
    intent = parse_pr_intent("docs(readme): update", None)
    assert intent.conventional_type is not None and intent.conventional_type.type == "docs"


def test_pi_14_case_insensitive_type() -> None:
    intent = parse_pr_intent("Fix: a bug", None)
    assert intent.conventional_type is not None and intent.conventional_type.type == "fix"


def test_pi_15_not_conventional() -> None:
    assert parse_pr_intent("Not a conventional: commit", None).conventional_type is None


def test_pi_16_feat_breaking_detected() -> None:
    assert parse_pr_intent("feat!: new API", None).breaking_change_detected is True


def test_pi_17_body_breaking_change() -> None:
    intent = parse_pr_intent("x", "This is a breaking change for clients")
    assert intent.breaking_change_detected is True
    assert intent.breaking_change_sources[0].source == "body"


def test_pi_18_body_this_breaks() -> None:
    assert parse_pr_intent("x", "This breaks backward compatibility").breaking_change_detected is True


def test_pi_19_body_breaking_api() -> None:
    assert parse_pr_intent("x", "Breaking API response format").breaking_change_detected is True


def test_pi_20_fenced_block_ignored() -> None:
    assert parse_pr_intent("x", "Notes:\n```\nbreaking change\n```\n").breaking_change_detected is False


def test_pi_21_inline_code_ignored() -> None:
    assert parse_pr_intent("x", "Mentions `breaking change` in code").breaking_change_detected is False


def test_pi_22_commit_source() -> None:
    intent = parse_pr_intent(
        "x", None, [CommitMessage(sha="abc1234", message="breaking change: remove old API")]
    )
    assert intent.breaking_change_sources == [
        BreakingChangeSource(source="commit", excerpt="breaking change: remove old API", commit_sha="abc1234")
    ]


def test_pi_23_commit_wip() -> None:
    assert parse_pr_intent("x", None, _commits(["[WIP] checkpoint"])).is_wip is True


def test_pi_24_commit_security_review() -> None:
    assert parse_pr_intent("x", None, _commits(["[security-review] auth"])).focus_areas == ["security"]


def test_pi_25_empty_commits() -> None:
    assert parse_pr_intent("x", None, []) == parse_pr_intent("x", None)


def test_pi_26_undefined_commits() -> None:
    assert parse_pr_intent("x", None, None) == DEFAULT_EMPTY_INTENT


def test_pi_27_sampling_finds_tags_in_sampled_indices() -> None:
    messages = ["chore"] * 60
    for i in (24, 29, 49):
        messages[i] = "[wip] sampled"
    assert parse_pr_intent("x", None, _commits(messages)).is_wip is True
    messages = ["chore"] * 60
    messages[25] = "[wip] not sampled"  # (25+1) % 5 != 0 and not in the first/last 10
    assert parse_pr_intent("x", None, _commits(messages)).is_wip is False


def test_pi_28_thirty_commits_all_scanned() -> None:
    messages = ["chore"] * 29 + ["[wip] last"]
    assert parse_pr_intent("x", None, _commits(messages)).is_wip is True


def test_pi_29_fifty_commits_all_scanned() -> None:
    messages = ["chore"] * 49 + ["[wip] last"]
    assert parse_pr_intent("x", None, _commits(messages)).is_wip is True


def test_pi_30_empty_intent_section() -> None:
    assert build_keyword_parsing_section(DEFAULT_EMPTY_INTENT) == "- Keyword parsing: No keywords detected"


def test_pi_31_keyword_section_contents() -> None:
    intent = parse_pr_intent(
        "[WIP] feat!: update auth [foobar]",
        None,
        [CommitMessage(sha="abc1234", message="BREAKING CHANGE: drop v1")],
    )
    section = build_keyword_parsing_section(intent)
    for part in (
        "[WIP] in title",
        "focus hints: [FOOBAR]",
        "conventional type: feat (breaking)",
        "breaking change in commit abc1234",
    ):
        assert part in section


def test_x_41_bang_after_scope_is_not_conventional() -> None:
    """R4.37 X-41: ``feat(api)!: x`` is not recognised; ``feat!(api): x`` is."""
    intent = parse_pr_intent("feat(api)!: x", None)
    assert intent.conventional_type is None and intent.breaking_change_sources == []
    assert parse_pr_intent("feat!(api): x", None).breaking_change_sources[0].source == "title"
    assert parse_pr_intent("feat (api): x", None).conventional_type is None
    assert parse_pr_intent("feat :x", None).conventional_type is not None


def test_sampling_indices() -> None:
    commits = _commits([str(i) for i in range(60)])
    picked = [int(c.message) for c in sample_commits(commits)]
    assert picked == [*range(10), 14, 19, 24, 29, 34, 39, 44, 49, *range(50, 60)]


def test_trap_bracket_tags_trim_with_js_whitespace() -> None:
    """JS ``trim`` strips U+FEFF but not U+0085; ``[[nested]]`` gives ``[nested``."""
    intent = parse_pr_intent("[\ufeffwip] [wip\x85] [[nested]]", None)
    assert [t.tag for t in intent.bracket_tags] == ["wip", "wip\x85", "[nested"]
    assert intent.recognized == ["wip"]


def test_trap_breaking_markers_use_js_whitespace_and_ascii_boundaries() -> None:
    """``breaking\\ufeffchange`` matches (U+FEFF is JS ``\\s``); ``nonbreaking change`` does not."""
    assert parse_pr_intent("x", "breaking\ufeffchange").breaking_change_detected is True
    assert parse_pr_intent("x", "nonbreaking change").breaking_change_detected is False
    assert parse_pr_intent("x", "not breaking-change").breaking_change_detected is False
    assert parse_pr_intent("x", "BREAKING-CHANGE").breaking_change_detected is True


def test_trap_conventional_regex_folds_ascii_only() -> None:
    """JS ``/i`` without ``u`` does not fold ``ſ`` to ``s``: ``ſtyle:`` is not a conventional type."""
    assert parse_pr_intent("ſtyle: x", None).conventional_type is None
    assert parse_pr_intent("STYLE: x", None).conventional_type is not None


def test_code_is_replaced_by_a_space_in_the_body_excerpt() -> None:
    intent = parse_pr_intent("x", "a ```\ncode\n``` b `c` This breaks things")
    assert intent.breaking_change_sources[0].excerpt == "a   b   This breaks things"


def test_body_excerpt_is_120_characters() -> None:
    body = "breaking change " + "x" * 300
    assert len(parse_pr_intent("x", body).breaking_change_sources[0].excerpt) == 120


def test_trap_missing_commit_sha_renders_js_undefined() -> None:
    intent = {
        "bracket_tags": [{"tag": "style-ok", "recognized": True, "source": "commit"}],
        "breaking_change_detected": True,
        "breaking_change_sources": [{"source": "commit", "excerpt": "x"}],
        "recognized": ["style-ok"],
    }
    assert build_keyword_parsing_section(intent) == (
        "- Keyword parsing:\n  - recognized: [STYLE-OK] in commit undefined\n  - breaking change in commit undefined"
    )


def test_trap_keyword_section_uppercases_the_js_way() -> None:
    intent = {"unrecognized": ["straße", "ﬁx"], "bracket_tags": []}
    assert build_keyword_parsing_section(intent) == "- Keyword parsing:\n  - focus hints: [STRASSE], [FIX]"
