"""The lexical and recency constants of ``headgap`` are `.kodiai.yml` keys: the cut resolves them from the
parsed config, and what `kodiai memory calibrate` prints is YAML that gives the derived profile back."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from kodiai.cli.main import app
from kodiai.config import parse_repo_config
from kodiai.config.models import RetrievalConfig
from kodiai.evaluation.calibration import calibration_yaml_keys, profile_only_keys
from kodiai.learning.threshold.head_gap import HeadGapCut
from kodiai.learning.threshold.profiles import (
    MINILM_PROFILE,
    VOYAGE_PROFILE,
    CalibrationProfile,
    resolve_cut,
    resolve_profile,
)

LEXICAL = """
knowledge:
  retrieval:
    calibration:
      headLexicalBand: 0.4
      headLexicalWeight: 0.25
      headRecencyMargin: 0.2
"""


def retrieval_of(text: str) -> RetrievalConfig:
    return parse_repo_config(text).config.knowledge.retrieval


def test_the_cut_takes_the_lexical_and_recency_keys_from_the_config() -> None:
    retrieval = retrieval_of(LEXICAL)
    cut = resolve_cut("all-MiniLM-L6-v2", retrieval.cut_strategy, retrieval.calibration)
    assert isinstance(cut, HeadGapCut) and cut.uses_lexical
    assert (cut.params.lexical_band, cut.params.lexical_weight, cut.params.recency_margin) == (0.4, 0.25, 0.2)
    assert cut.params.band == MINILM_PROFILE.head_band  # unset keys: the profile's value


def test_unset_keys_keep_the_profile_values() -> None:
    retrieval = retrieval_of("knowledge:\n  retrieval:\n    calibration:\n      headBand: 0.3\n")
    profile = resolve_profile("all-MiniLM-L6-v2", retrieval.calibration)
    assert profile == MINILM_PROFILE.model_copy(update={"head_band": 0.3})


def test_a_zero_lexical_weight_switches_the_channel_off() -> None:
    retrieval = retrieval_of("knowledge:\n  retrieval:\n    calibration:\n      headLexicalWeight: 0\n")
    cut = resolve_cut("all-MiniLM-L6-v2", retrieval.cut_strategy, retrieval.calibration)
    assert isinstance(cut, HeadGapCut) and not cut.uses_lexical


def test_keys_for_another_model_are_ignored() -> None:
    retrieval = retrieval_of(LEXICAL.replace("calibration:\n", "calibration:\n      model: other-model\n"))
    assert resolve_profile("all-MiniLM-L6-v2", retrieval.calibration) == MINILM_PROFILE


def test_headgap_under_voyage_takes_the_keys_too() -> None:
    """voyage-code-3's profile is maxgap, but cutStrategy: headgap uses its head constants and the keys."""
    retrieval = retrieval_of(LEXICAL.replace("retrieval:\n", "retrieval:\n    cutStrategy: headgap\n"))
    cut = resolve_cut("voyage-code-3", retrieval.cut_strategy, retrieval.calibration)
    assert isinstance(cut, HeadGapCut)
    assert cut.params.lexical_weight == 0.25 and VOYAGE_PROFILE.head_lexical_weight == 0.0


@pytest.mark.parametrize(
    "profile",
    [
        MINILM_PROFILE,
        MINILM_PROFILE.model_copy(
            update={
                "head_band": 0.2,
                "head_lexical_band": 0.6,
                "head_lexical_weight": 0.3,
                "head_recency_margin": 0.25,
                "head_min_prominence": 0.11,
            }
        ),
    ],
)
def test_printed_yaml_gives_the_profile_back_through_kodiai_yml(profile: CalibrationProfile) -> None:
    """The round trip a user makes: calibrate's YAML → `.kodiai.yml` → the loader → the cut."""
    buffer = io.StringIO()
    YAML(typ="safe", pure=True).dump(calibration_yaml_keys(profile, "all-MiniLM-L6-v2"), buffer)
    parsed = parse_repo_config(buffer.getvalue())
    assert parsed.warnings == []
    retrieval = parsed.config.knowledge.retrieval
    assert resolve_profile("all-MiniLM-L6-v2", retrieval.calibration) == profile
    assert profile_only_keys(profile) == {}


def test_only_a_recency_margin_of_none_is_beyond_the_yaml() -> None:
    profile = MINILM_PROFILE.model_copy(update={"head_recency_margin": None})
    assert profile_only_keys(profile) == {"headRecencyMargin": None}
    calibration = calibration_yaml_keys(profile, "m")["knowledge"]["retrieval"]["calibration"]
    assert "headRecencyMargin" not in calibration


# ---- the command, with the real local MiniLM on a tiny labelled set ------------------------------------

FINDINGS = [
    ("f1", "Fix nil pointer dereference in context release", "ctx.go"),
    ("f2", "Fix race when closing the router", "router.go"),
    ("f3", "Fix header parsing of quoted values", "helpers.go"),
    ("f4", "Fix memory leak in pool reuse", "ctx.go"),
]
QUERIES = [
    ("q1", "Fix nil pointer in context methods after release\nLanguages: Go\nctx.go", ["f1", "f4"]),
    ("q2", "Handle quoted header values\nLanguages: Go\nhelpers.go", ["f3"]),
]


def write_set(root: Path) -> Path:
    corpus = [
        {
            "id": fid,
            "repo": "acme/api",
            "owner": "acme",
            "finding_text": text,
            "file_path": path,
            "category": "correctness",
            "severity": None,
            "created_at": "2024-01-03T10:00:00Z",
        }
        for fid, text, path in FINDINGS
    ]
    queries = [
        {
            "id": qid,
            "repo": "acme/api",
            "owner": "acme",
            "created_at": "2024-02-01T00:00:00Z",
            "query_text": text,
            "languages": ["Go"],
            "relevant_ids": relevant,
            "graded": dict.fromkeys(relevant, 2),
        }
        for qid, text, relevant in QUERIES
    ]
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return root


@pytest.mark.slow
def test_calibrate_prints_the_lexical_and_recency_constants_as_keys(tmp_path: Path) -> None:
    data = write_set(tmp_path / "set")
    result = CliRunner().invoke(
        app, ["memory", "calibrate", "--data", str(data), "--cache", str(tmp_path / "cache")]
    )
    assert result.exit_code == 0, result.output
    assert "cannot set" not in result.stdout and "cannot express" not in result.stdout
    calibration = YAML(typ="safe", pure=True).load(result.stdout)["knowledge"]["retrieval"]["calibration"]
    assert {"headBand", "headLexicalBand", "headLexicalWeight", "headRecencyMargin"} <= set(calibration)
    assert calibration["headLexicalWeight"] == MINILM_PROFILE.head_lexical_weight
    assert calibration["headRecencyMargin"] == MINILM_PROFILE.head_recency_margin
    # Pasted into .kodiai.yml it parses without a warning or an unknown key.
    parsed = parse_repo_config(result.stdout)
    assert parsed.warnings == []
    assert parsed.config.knowledge.retrieval.calibration is not None
    assert parsed.config.knowledge.retrieval.calibration.head_lexical_band == calibration["headLexicalBand"]
