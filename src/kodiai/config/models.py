"""The complete `.kodiai.yml` schema (behaviour P5.2): every key, type, default and bound.

Field names are snake_case; the YAML keys are the original's camelCase aliases. Optional keys without a
default are `None`, so `model_dump(by_alias=True, exclude_none=True)` gives the original's parsed config.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from kodiai.compat.zod_types import Js
from kodiai.config.base import Bool, ConfigModel, NonEmptyStr, OptStr, SeverityValue, Str, required
from kodiai.config.review_models import ReviewConfig

DEFAULT_MODEL = "claude-sonnet-4-5-20250929"
DEFAULT_DENY_PATHS: tuple[str, ...] = (
    ".github/",
    ".git/",
    ".planning/",
    ".kodiai.yml",
    ".env",
    ".env.*",
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/*credentials*",
    "**/*secret*",
)


def _num(ge: float | None = None, le: float | None = None) -> Js:
    return Js(ge=ge, le=le)


class WriteSecretScanConfig(ConfigModel):
    """Secret scanning of staged additions in write mode."""

    enabled: Bool = Field(True, description="Regex + entropy scan of staged additions.")


class WriteConfig(ConfigModel):
    """Mention-driven code changes (`apply:` / `change:`)."""

    enabled: Bool = Field(False, description="Allow mention-driven code changes.")
    allow_paths: list[Str] = Field(
        default_factory=list, description="If non-empty, every staged path must match one glob."
    )
    deny_paths: list[Str] = Field(
        default_factory=lambda: list(DEFAULT_DENY_PATHS),
        description="Staged paths matching any glob block the write (a list replaces the defaults).",
    )
    min_interval_seconds: Annotated[float, _num(0, 86400)] = Field(
        0, description="Minimum seconds between write requests per repo (0 = no limit)."
    )
    secret_scan: WriteSecretScanConfig = Field(
        default_factory=WriteSecretScanConfig, description="Secret scanning of staged additions."
    )
    allow_forks: Annotated[bool | None, Js()] = Field(
        None,
        description="Write requests on pull requests from forks (read from the base branch only): the "
        "change is replied as a patch, never pushed. Unset = refused.",
    )


class MentionConversationConfig(ConfigModel):
    """Limits of a mention conversation."""

    max_turns_per_pr: Annotated[float, _num(1, 50)] = Field(
        10, description="Reply-thread turns per PR/issue."
    )
    context_budget_chars: Annotated[float, _num(1000, 50000)] = Field(
        8000, description="Character budget for the thread context."
    )


class MentionConfig(ConfigModel):
    """Answers to `@kodiai` (and `@claude`) mentions."""

    enabled: Bool = Field(True, description="Master switch for mentions.")
    accept_claude_alias: Bool = Field(True, description="Also answer `@claude`.")
    allowed_users: list[Str] = Field(
        default_factory=list, description="If non-empty, only these users (case-insensitive) can trigger."
    )
    prompt: OptStr = Field(None, description="Extra instructions for mention runs.")
    allowed_domains: list[Str] | None = Field(
        None,
        description="Domains mention runs may fetch from (WebFetch; WebSearch only when set). Read from "
        "the base branch only. Unset = no web access.",
    )
    conversation: MentionConversationConfig = Field(
        default_factory=MentionConversationConfig, description="Conversation limits."
    )


class TelemetryConfig(ConfigModel):
    """Execution and retrieval telemetry for this repository."""

    enabled: Bool = Field(True, description="Record executions and retrieval quality rows.")
    cost_warning_usd: Annotated[float, _num(0)] = Field(
        0, description="Warn when a run costs more than this (0 = never)."
    )
    daily_spend_cap_usd: Annotated[float | None, _num(0)] = Field(
        None,
        description="This repository's spend cap per UTC day in USD: new runs are refused once reached. "
        "Only lowers the operator's cap, never raises it; counted even with telemetry disabled. Unset or "
        "0 = none.",
    )


class KnowledgeSharingConfig(ConfigModel):
    """Cross-repository retrieval within the owner."""

    enabled: Bool = Field(False, description="Also retrieve memories from the owner's other repos.")


class EmbeddingsConfig(ConfigModel):
    """Embedding settings (parsed for compatibility; the provider is chosen by the environment)."""

    enabled: Bool = Field(True, description="Parsed but not used at runtime.")
    model: Str = Field("voyage-code-3", description="Parsed but not used at runtime.")
    dimensions: Annotated[float, _num(256, 2048)] = Field(1024, description="Parsed but not used at runtime.")


class RetrievalCalibrationConfig(ConfigModel):
    """Cut constants for the embedding model in use (`kodiai memory calibrate` prints them); every key is
    optional and unset keys come from the model's built-in profile."""

    model: OptStr = Field(
        None, description="Embedding model the keys were derived for (ignored under another)."
    )
    floor: Annotated[float | None, _num(0, 2)] = Field(None, description="maxgap: lowest threshold.")
    ceiling: Annotated[float | None, _num(0, 2)] = Field(None, description="maxgap: highest threshold.")
    min_gap: Annotated[float | None, _num(0, 2)] = Field(None, description="maxgap: smallest gap that cuts.")
    fallback: Annotated[float | None, _num(0, 2)] = Field(
        None, description="maxgap: threshold without a clear gap (unset = distanceThreshold)."
    )
    head: Annotated[float | None, _num(1, 20)] = Field(None, description="headgap: leading gaps searched.")
    head_min_relative_gap: Annotated[float | None, _num(0, 10)] = Field(
        None,
        description="headgap: smallest gap of the pool-normalised score (0..1) that cuts; 0 = no gap rule.",
    )
    head_band: Annotated[float | None, _num(0, 10)] = Field(
        None,
        description="headgap, vector channel only: keep results whose pool-normalised similarity (0..1) is "
        "within this of the best.",
    )
    head_lexical_band: Annotated[float | None, _num(0, 10)] = Field(
        None,
        description="headgap with the lexical channel: keep results whose fused score (0..1) is within this "
        "of the best.",
    )
    head_lexical_weight: Annotated[float | None, _num(0, 1)] = Field(
        None,
        description="headgap: weight of the lexical channel (BM25) in the fused score; 0 = vector only.",
    )
    head_recency_margin: Annotated[float | None, _num(0, 10)] = Field(
        None,
        description="headgap: a kept memory is dropped only for one at least as similar whose recency "
        "weight is this share higher (0.1 = 10 %).",
    )
    head_ceiling: Annotated[float | None, _num(0, 2)] = Field(
        None, description="headgap: abstain when the best result is farther."
    )
    head_floor: Annotated[float | None, _num(0, 2)] = Field(
        None, description="headgap: results this close are always kept."
    )
    head_min_prominence: Annotated[float | None, _num(0, 0.99)] = Field(
        None, description="headgap: abstain unless the best is this share below the pool's median."
    )


class RetrievalConfig(ConfigModel):
    """Learning-memory retrieval for reviews. New keys must be optional and default to `None`."""

    enabled: Bool = Field(True, description="Retrieve similar past findings for reviews.")
    top_k: Annotated[float, _num(1, 20)] = Field(5, description="Number of memories kept.")
    distance_threshold: Annotated[float, _num(0, 2)] = Field(
        0.3, description="L2 distance cutoff, or the base of the adaptive threshold."
    )
    adaptive: Bool = Field(True, description="Gap-based adaptive distance threshold.")
    max_context_chars: Annotated[float, _num(0, 5000)] = Field(
        2000, description="Character budget of the retrieved context."
    )
    confidence_labels: Annotated[bool | None, Js()] = Field(
        None, description="Label retrieved memories high/medium/low in the prompt (unset = on)."
    )
    ambiguity_signal: Annotated[bool | None, Js()] = Field(
        None, description="Record how many candidates cluster around the best match (unset = off)."
    )
    cut_strategy: Annotated[Literal["maxgap", "headgap"] | None, Js()] = Field(
        None,
        description="How the candidates are cut: maxgap (the original's) or headgap (unset = per model).",
    )
    calibration: RetrievalCalibrationConfig | None = Field(
        None, description="Cut constants for the embedding model (unset = built-in profile)."
    )
    abstain: Annotated[bool | None, Js()] = Field(
        None,
        description="headgap: keep no memory when the pool's evidence is too weak (unset = on; false turns "
        "it off; see retrieval-quality.md).",
    )
    second_stage: Annotated[bool | None, Js()] = Field(
        None,
        description="headgap: re-rank the pool with the learned ranker over (PR, memory) pairs (unset = on; "
        "false turns it off; see retrieval-quality.md).",
    )

    def advisories(self) -> list[str]:
        """Valid but questionable settings, for the loader to log (nothing here is an error)."""
        if self.ambiguity_signal and self.top_k <= 3:
            return [
                f"knowledge.retrieval.ambiguitySignal with topK {self.top_k:g} (<= 3): the signal is taken "
                "on the candidate pool, but so few results make it a weak guide"
            ]
        return []


class KnowledgeConfig(ConfigModel):
    """Knowledge store and learning memory."""

    share_global: Bool = Field(False, description="Deprecated: write anonymised global pattern aggregates.")
    sharing: KnowledgeSharingConfig = Field(
        default_factory=KnowledgeSharingConfig, description="Cross-repository retrieval."
    )
    embeddings: EmbeddingsConfig = Field(default_factory=EmbeddingsConfig, description="Embedding settings.")
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig, description="Retrieval settings.")


class SeverityFloor(ConfigModel):
    """A user severity floor: findings whose title matches are raised to `minSeverity`."""

    pattern: NonEmptyStr = Field(
        default_factory=required, validate_default=True, description="Finding title pattern."
    )
    language: OptStr = Field(None, description="Only for files of this language.")
    min_severity: SeverityValue = Field(
        default_factory=required, validate_default=True, description="The lowest severity allowed."
    )
    skip_test_files: Bool = Field(True, description="Do not apply the floor in test files.")


class ToolingOverride(ConfigModel):
    """Per-language control of formatter/import-order finding suppression."""

    language: Str = Field(default_factory=required, validate_default=True, description="Language name.")
    suppress_formatting: Bool = Field(True, description="Suppress formatting findings.")
    suppress_import_order: Bool = Field(True, description="Suppress import-order findings.")
    config_files: list[Str] | None = Field(None, description="Formatter/linter config files to detect.")


class LanguageRulesConfig(ConfigModel):
    """Severity floors and tooling suppression."""

    severity_floors: list[SeverityFloor] = Field(default_factory=list, description="User severity floors.")
    tooling_overrides: list[ToolingOverride] = Field(
        default_factory=list, description="Per-language tooling suppression."
    )
    disable_builtin_floors: Bool = Field(False, description="Use only the user floors.")


class RiskWeightsConfig(ConfigModel):
    """File risk weights for large-PR triage (normalised at runtime)."""

    lines_changed: Annotated[float, _num(0, 1)] = Field(0.3, description="Weight of lines changed.")
    path_risk: Annotated[float, _num(0, 1)] = Field(0.3, description="Weight of risky paths.")
    file_category: Annotated[float, _num(0, 1)] = Field(0.2, description="Weight of the file category.")
    language_risk: Annotated[float, _num(0, 1)] = Field(0.1, description="Weight of the language.")
    file_extension: Annotated[float, _num(0, 1)] = Field(0.1, description="Weight of the file extension.")


class LargePRConfig(ConfigModel):
    """Triage of pull requests with many files."""

    file_threshold: Annotated[float, _num(10, 1000)] = Field(
        50, description="PRs with more files than this are triaged."
    )
    full_review_count: Annotated[float, _num(5, 200)] = Field(
        30, description="Top-risk files reviewed fully."
    )
    abbreviated_count: Annotated[float, _num(0, 200)] = Field(
        20, description="Next files reviewed critical/major only."
    )
    risk_weights: RiskWeightsConfig = Field(
        default_factory=RiskWeightsConfig, description="File risk weights."
    )


class AutoSuppressThresholdsConfig(ConfigModel):
    """All three must be met before a pattern is auto-suppressed."""

    min_thumbs_down: Annotated[float, _num(1, 50)] = Field(3, description="Minimum thumbs-down reactions.")
    min_distinct_reactors: Annotated[float, _num(1, 50)] = Field(3, description="Minimum distinct reactors.")
    min_distinct_prs: Annotated[float, _num(1, 50)] = Field(
        2, alias="minDistinctPRs", description="Minimum distinct pull requests."
    )


class AutoSuppressConfig(ConfigModel):
    """Auto-suppression of finding patterns users thumbed down."""

    enabled: Bool = Field(False, description="Auto-suppress thumbed-down patterns.")
    thresholds: AutoSuppressThresholdsConfig = Field(
        default_factory=AutoSuppressThresholdsConfig, description="Suppression thresholds."
    )


class FeedbackConfig(ConfigModel):
    """Learning from reactions."""

    auto_suppress: AutoSuppressConfig = Field(
        default_factory=AutoSuppressConfig, description="Auto-suppression."
    )


class TimeoutConfig(ConfigModel):
    """Dynamic execution timeout."""

    dynamic_scaling: Bool = Field(True, description="Scale the timeout with the PR's estimated risk.")
    auto_reduce_scope: Bool = Field(
        True, description="Force the minimal profile for high-risk auto-profiled PRs."
    )


class RepoConfig(ConfigModel):
    """A repository's `.kodiai.yml`."""

    model: Str = Field(DEFAULT_MODEL, description="Claude model id.")
    max_turns: Annotated[float, _num(1, 100)] = Field(25, description="Agent max turns.")
    timeout_seconds: Annotated[float, _num(30, 1800)] = Field(600, description="Base execution timeout.")
    system_prompt_append: OptStr = Field(None, description="Appended to the system prompt.")
    review: ReviewConfig = Field(default_factory=ReviewConfig, description="Automatic pull-request review.")
    write: WriteConfig = Field(default_factory=WriteConfig, description="Mention-driven code changes.")
    mention: MentionConfig = Field(default_factory=MentionConfig, description="Mention answers.")
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig, description="Telemetry.")
    knowledge: KnowledgeConfig = Field(default_factory=KnowledgeConfig, description="Knowledge and memory.")
    language_rules: LanguageRulesConfig = Field(
        default_factory=LanguageRulesConfig, description="Severity floors and tooling suppression."
    )
    large_pr: LargePRConfig = Field(
        default_factory=LargePRConfig, alias="largePR", description="Large pull-request triage."
    )
    feedback: FeedbackConfig = Field(default_factory=FeedbackConfig, description="Learning from reactions.")
    timeout: TimeoutConfig = Field(default_factory=TimeoutConfig, description="Dynamic timeout.")

    def to_yaml_dict(self) -> dict[str, Any]:
        """The config as the original would hold it: camelCase keys, unset optional keys left out."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


#: Top-level keys validated one by one in the fallback pass, in the original's order.
SECTIONS: tuple[str, ...] = (
    "model",
    "maxTurns",
    "timeoutSeconds",
    "systemPromptAppend",
    "review",
    "write",
    "mention",
    "telemetry",
    "knowledge",
    "languageRules",
    "largePR",
    "feedback",
    "timeout",
)
