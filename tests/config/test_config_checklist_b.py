"""behaviour P8.1 (`execution/config.test.ts`), items 41-77."""

from __future__ import annotations

from kodiai.config import (
    FileCategoriesConfig,
    PathInstructionConfig,
    RepoConfigResult,
    SeverityFloor,
    SuppressionPatternConfig,
    ToolingOverride,
    parse_repo_config,
)


def parse(text: str) -> RepoConfigResult:
    return parse_repo_config(text)


def sections(result: RepoConfigResult) -> list[str]:
    return [w.section for w in result.warnings]


def test_8_1_41_ignored_areas_parse() -> None:
    assert parse("review:\n  ignoredAreas: [style]\n").config.review.ignored_areas == ["style"]


def test_8_1_42_max_comments_15_parses() -> None:
    r = parse("review:\n  maxComments: 15\n")
    assert r.config.review.max_comments == 15 and r.warnings == []


def test_8_1_43_max_comments_50_resets_review() -> None:
    r = parse("review:\n  maxComments: 50\n")
    assert r.config.review.max_comments == 7
    assert sections(r) == ["review"]
    assert r.warnings[0].issues == ["maxComments: Too big: expected number to be <=25"]


def test_8_1_44_mode_turbo_resets_review() -> None:
    r = parse("review:\n  mode: turbo\n")
    assert r.config.review.mode == "standard" and sections(r) == ["review"]
    assert r.warnings[0].issues == ['mode: Invalid option: expected one of "standard"|"enhanced"']


def test_8_1_45_path_instruction_with_single_path() -> None:
    r = parse("review:\n  pathInstructions:\n    - path: 'src/**'\n      instructions: Check errors.\n")
    assert r.config.review.path_instructions == [
        PathInstructionConfig(path="src/**", instructions="Check errors.")
    ]


def test_8_1_46_path_instruction_with_list_of_paths() -> None:
    r = parse("review:\n  pathInstructions:\n    - path: [a/**, b/**]\n      instructions: x\n")
    assert r.config.review.path_instructions[0].path == ["a/**", "b/**"]


def test_8_1_47_path_instructions_default_empty() -> None:
    assert parse("review: {}\n").config.review.path_instructions == []


def test_8_1_48_profile_accepts_the_three_presets() -> None:
    for profile in ("strict", "balanced", "minimal"):
        r = parse(f"review:\n  profile: {profile}\n")
        assert r.config.review.profile == profile and r.warnings == []


def test_8_1_49_profile_undefined_when_omitted() -> None:
    r = parse("review:\n  enabled: true\n")
    assert r.config.review.profile is None
    assert "profile" not in r.config.to_yaml_dict()["review"]


def test_8_1_50_all_file_categories_parse() -> None:
    text = "review:\n  fileCategories:\n" + "".join(
        f"    {k}: ['{k}/**']\n" for k in ("source", "test", "config", "docs", "infra")
    )
    fc = parse(text).config.review.file_categories
    assert fc == FileCategoriesConfig(
        source=["source/**"], test=["test/**"], config=["config/**"], docs=["docs/**"], infra=["infra/**"]
    )


def test_8_1_51_file_categories_undefined_when_omitted() -> None:
    assert parse("review: {}\n").config.review.file_categories is None


def test_8_1_52_path_instruction_without_instructions_resets_review() -> None:
    r = parse("review:\n  maxComments: 10\n  pathInstructions:\n    - path: src/\n")
    assert r.config.review.max_comments == 7
    assert sections(r) == ["review"]
    assert r.warnings[0].issues == [
        "pathInstructions.0.instructions: Invalid input: expected string, received undefined"
    ]


def test_8_1_53_combined_review_fields_parse_together() -> None:
    text = """
review:
  mode: enhanced
  severity:
    minLevel: medium
  focusAreas: [security]
  ignoredAreas: [style]
  maxComments: 12
  profile: balanced
  pathInstructions:
    - path: lib/
      instructions: Careful.
  fileCategories:
    test: ['spec/**']
"""
    r = parse(text)
    assert r.warnings == []
    review = r.config.review
    assert (review.mode, review.severity.min_level, review.max_comments, review.profile) == (
        "enhanced",
        "medium",
        12,
        "balanced",
    )
    assert review.focus_areas == ["security"] and review.ignored_areas == ["style"]
    assert r.config.to_yaml_dict()["review"]["fileCategories"] == {"test": ["spec/**"]}


def test_8_1_54_string_suppressions_parse() -> None:
    r = parse("review:\n  suppressions: ['missing docs', 'glob:*naming*', 'regex:^todo']\n")
    assert r.config.review.suppressions == ["missing docs", "glob:*naming*", "regex:^todo"]


def test_8_1_55_object_suppressions_parse() -> None:
    text = (
        "review:\n  suppressions:\n    - pattern: unused import\n      severity: [minor]\n"
        "      category: [style]\n      paths: ['tests/**']\n"
    )
    r = parse(text)
    assert r.warnings == []
    assert r.config.review.suppressions == [
        SuppressionPatternConfig(
            pattern="unused import", severity=["minor"], category=["style"], paths=["tests/**"]
        )
    ]


def test_8_1_56_min_confidence_parses_and_defaults_to_zero() -> None:
    assert parse("review:\n  minConfidence: 40\n").config.review.min_confidence == 40
    assert parse("").config.review.min_confidence == 0


def test_8_1_57_custom_prioritization_weights_parse() -> None:
    text = "review:\n  prioritization:\n    severity: 0.5\n    fileRisk: 0.2\n    category: 0.2\n    recurrence: 0.1\n"
    p = parse(text).config.review.prioritization
    assert (p.severity, p.file_risk, p.category, p.recurrence) == (0.5, 0.2, 0.2, 0.1)


def test_8_1_58_weight_above_one_resets_review() -> None:
    r = parse("review:\n  maxComments: 9\n  prioritization:\n    severity: 1.2\n")
    assert sections(r) == ["review"]
    assert r.config.review.max_comments == 7 and r.config.review.prioritization.severity == 0.45
    assert r.warnings[0].issues == ["prioritization.severity: Too big: expected number to be <=1"]


def test_8_1_59_min_confidence_150_resets_review() -> None:
    r = parse("review:\n  minConfidence: 150\n  suppressions: [foo]\n")
    assert sections(r) == ["review"] and r.config.review.suppressions == []


def test_8_1_60_embeddings_defaults() -> None:
    e = parse("knowledge: {}\n").config.knowledge.embeddings
    assert (e.enabled, e.model, e.dimensions) == (True, "voyage-code-3", 1024)


def test_8_1_61_sharing_disabled_by_default() -> None:
    assert parse("").config.knowledge.sharing.enabled is False


def test_8_1_62_custom_embeddings_parse() -> None:
    text = "knowledge:\n  embeddings:\n    enabled: false\n    model: voyage-code-2\n    dimensions: 512\n"
    e = parse(text).config.knowledge.embeddings
    assert (e.enabled, e.model, e.dimensions) == (False, "voyage-code-2", 512)


def test_8_1_63_sharing_enabled_parses() -> None:
    assert parse("knowledge:\n  sharing:\n    enabled: true\n").config.knowledge.sharing.enabled is True


def test_8_1_64_share_global_alone_keeps_other_knowledge_defaults() -> None:
    r = parse("knowledge:\n  shareGlobal: true\n")
    k = r.config.knowledge
    assert r.warnings == [] and k.share_global is True
    assert k.sharing.enabled is False and k.embeddings.model == "voyage-code-3"


def test_8_1_65_on_synchronize_defaults_false_for_older_configs() -> None:
    r = parse("review:\n  triggers:\n    onOpened: true\n    onReadyForReview: true\n")
    assert r.warnings == [] and r.config.review.triggers.on_synchronize is False


def test_8_1_66_retrieval_defaults_with_no_file_and_without_retrieval_block() -> None:
    for text in ("", "knowledge:\n  shareGlobal: false\n"):
        rt = parse(text).config.knowledge.retrieval
        assert (rt.enabled, rt.top_k, rt.distance_threshold, rt.max_context_chars) == (True, 5, 0.3, 2000)
        assert rt.adaptive is True


def test_8_1_67_custom_retrieval_values_parse() -> None:
    text = (
        "knowledge:\n  retrieval:\n    enabled: false\n    topK: 10\n    distanceThreshold: 0.5\n"
        "    maxContextChars: 3000\n"
    )
    rt = parse(text).config.knowledge.retrieval
    assert (rt.enabled, rt.top_k, rt.distance_threshold, rt.max_context_chars) == (False, 10, 0.5, 3000)


def test_8_1_68_output_language_defaults_to_en() -> None:
    assert parse("").config.review.output_language == "en"


def test_8_1_69_output_language_ja_is_kept() -> None:
    assert parse("review:\n  outputLanguage: ja\n").config.review.output_language == "ja"


def test_8_1_70_output_language_spanish_is_kept() -> None:
    assert parse("review:\n  outputLanguage: Spanish\n").config.review.output_language == "Spanish"


def test_8_1_71_invalid_review_resets_output_language() -> None:
    r = parse("review:\n  outputLanguage: ja\n  maxComments: 0\n")
    assert r.config.review.output_language == "en" and sections(r) == ["review"]


def test_8_1_72_language_rules_defaults() -> None:
    lr = parse("").config.language_rules
    assert (lr.severity_floors, lr.tooling_overrides, lr.disable_builtin_floors) == ([], [], False)


def test_8_1_73_severity_floors_parse() -> None:
    text = (
        "languageRules:\n  severityFloors:\n    - pattern: sql injection\n      minSeverity: critical\n"
        "      skipTestFiles: false\n    - pattern: unsafe\n      language: Rust\n      minSeverity: major\n"
    )
    r = parse(text)
    assert r.warnings == []
    assert r.config.language_rules.severity_floors == [
        SeverityFloor(pattern="sql injection", min_severity="critical", skip_test_files=False),
        SeverityFloor(pattern="unsafe", language="Rust", min_severity="major", skip_test_files=True),
    ]
    assert "language" not in r.config.to_yaml_dict()["languageRules"]["severityFloors"][0]


def test_8_1_74_tooling_overrides_parse() -> None:
    text = "languageRules:\n  toolingOverrides:\n    - language: Python\n      suppressFormatting: false\n"
    r = parse(text)
    assert r.config.language_rules.tooling_overrides == [
        ToolingOverride(language="Python", suppress_formatting=False, suppress_import_order=True)
    ]
    assert "configFiles" not in r.config.to_yaml_dict()["languageRules"]["toolingOverrides"][0]


def test_8_1_75_severity_floors_not_an_array_resets_language_rules() -> None:
    r = parse("languageRules:\n  severityFloors: notanarray\n  disableBuiltinFloors: true\n")
    assert sections(r) == ["languageRules"]
    assert r.config.language_rules.disable_builtin_floors is False
    assert r.warnings[0].issues == ["severityFloors: Invalid input: expected array, received string"]


def test_8_1_76_disable_builtin_floors_parses() -> None:
    assert parse(
        "languageRules:\n  disableBuiltinFloors: true\n"
    ).config.language_rules.disable_builtin_floors


def test_8_1_77_unknown_language_in_tooling_overrides_is_accepted() -> None:
    r = parse("languageRules:\n  toolingOverrides:\n    - language: Brainfuck\n")
    assert r.warnings == [] and r.config.language_rules.tooling_overrides[0].language == "Brainfuck"
