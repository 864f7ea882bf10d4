"""Fuzz `parse_repo_config`: > 2,000 random documents; only `RepoConfigError` may ever escape.

Two generators: YAML-ish token soup (syntax edge cases: flow/block mixes, anchors, tags, tabs, quotes)
and random structures near the schema dumped with ruamel.yaml (type/bound edge cases). The second also
checks that the resolved config is itself a valid config: validating its camelCase dump again gives no
warnings and the same config.
"""

from __future__ import annotations

import io
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from kodiai.config import RepoConfigError, RepoConfigResult, parse_repo_config, validate_document

TEXT_EXAMPLES = 1400
STRUCTURE_EXAMPLES = 700

KEYS = [
    "model", "maxTurns", "timeoutSeconds", "systemPromptAppend", "review", "write", "mention", "telemetry",
    "knowledge", "languageRules", "largePR", "feedback", "timeout", "enabled", "triggers", "onOpened",
    "maxComments", "suppressions", "pattern", "severity", "category", "paths", "pathInstructions", "path",
    "instructions", "profile", "fileCategories", "source", "retrieval", "topK", "distanceThreshold",
    "severityFloors", "minSeverity", "toolingOverrides", "language", "riskWeights", "autoSuppress",
    "thresholds", "minDistinctPRs", "conversation", "maxTurnsPerPr", "denyPaths", "secretScan", "<<",
]  # fmt: skip
SCALAR_TOKENS = [
    "yes", "no", "on", "True", "null", "~", "0", "-1", "1e3", "0x1F", "0o17", "1_000", ".5", "-.5", ".nan",
    ".inf", "2024-01-01", "2024-01-01 10:00:00", "'q'", '"d\\n"', "strict", "major", "style", "''", "7.5",
    "!!str 5", "!!int x", "!!binary aGk=", "!!python/object x", "!x y", "&a 1", "*a", "|", ">-", "[]", "{}",
]  # fmt: skip
PUNCT = [
    ": ",
    ":",
    "- ",
    "-",
    "\n",
    "\n  ",
    "\n    ",
    " ",
    "\t",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "#c",
    "? ",
    "---",
    "...",
]

_token = st.one_of(st.sampled_from(KEYS), st.sampled_from(SCALAR_TOKENS), st.sampled_from(PUNCT))
yamlish = st.lists(_token, max_size=40).map("".join) | st.text(max_size=60)


def _check(text: str) -> RepoConfigResult | None:
    try:
        return parse_repo_config(text)
    except RepoConfigError as exc:
        assert str(exc).startswith("Invalid .kodiai.yml: ")
        return None


@settings(
    max_examples=TEXT_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(yamlish)
def test_random_yamlish_text_only_raises_repo_config_error(text: str) -> None:
    _check(text)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["strict", "major", "style", "security", "enhanced", "yes", "glob:*x*"]),
)
_structures = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=12,
)
documents = st.dictionaries(st.sampled_from(KEYS[:13]), _structures, max_size=8) | _structures


_DUMPER = YAML(typ="safe", pure=True)


def _dump(data: Any) -> str:
    out = io.StringIO()
    _DUMPER.dump(data, out)
    return out.getvalue()


@settings(
    max_examples=STRUCTURE_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(documents)
def test_random_structures_resolve_to_a_valid_config(data: Any) -> None:
    result = _check(_dump(data))
    assert result is not None, "a document dumped by a YAML library is never a syntax error"
    again = validate_document(result.config.to_yaml_dict())
    assert again.warnings == []
    assert again.config == result.config


def test_fuzz_budget_is_at_least_two_thousand_documents() -> None:
    assert TEXT_EXAMPLES + STRUCTURE_EXAMPLES >= 2000
