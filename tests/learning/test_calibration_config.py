"""`knowledge.retrieval.cutStrategy` / `knowledge.retrieval.calibration`: optional keys, parsed and resolved."""

from __future__ import annotations

from kodiai.config import parse_repo_config
from kodiai.learning.threshold.head_gap import HeadGapCut
from kodiai.learning.threshold.max_gap import MaxGapCut
from kodiai.learning.threshold.profiles import MINILM_PROFILE, resolve_cut, resolve_profile

YAML = """
knowledge:
  retrieval:
    cutStrategy: headgap
    calibration:
      model: all-MiniLM-L6-v2
      head: 4
      headCeiling: 0.9
      headBand: 0.05
"""


def test_new_keys_parse_with_camel_case_names() -> None:
    parsed = parse_repo_config(YAML)
    retrieval = parsed.config.knowledge.retrieval
    assert parsed.warnings == []
    assert retrieval.cut_strategy == "headgap"
    assert retrieval.calibration is not None
    assert (retrieval.calibration.head, retrieval.calibration.head_ceiling) == (4, 0.9)
    assert retrieval.calibration.floor is None


def test_parsed_keys_resolve_the_cut() -> None:
    retrieval = parse_repo_config(YAML).config.knowledge.retrieval
    cut = resolve_cut("all-MiniLM-L6-v2", retrieval.cut_strategy, retrieval.calibration)
    assert isinstance(cut, HeadGapCut)
    assert (cut.params.head, cut.params.ceiling, cut.params.band) == (4, 0.9, 0.05)
    assert cut.params.min_gap == MINILM_PROFILE.head_min_relative_gap
    # The same keys under voyage-code-3 are ignored (derived for MiniLM), but cutStrategy still applies.
    voyage = resolve_profile("voyage-code-3", retrieval.calibration)
    assert voyage.head_ceiling is None


def test_unset_keys_stay_out_of_the_dumped_config() -> None:
    """Optional, default None: the original's config parity vectors are unaffected."""
    config = parse_repo_config("knowledge:\n  retrieval:\n    topK: 3\n").config
    retrieval = config.model_dump(by_alias=True, exclude_none=True)["knowledge"]["retrieval"]
    assert "cutStrategy" not in retrieval and "calibration" not in retrieval
    assert isinstance(resolve_cut("voyage-code-3", config.knowledge.retrieval.cut_strategy), MaxGapCut)


def test_unknown_strategy_is_a_section_warning() -> None:
    parsed = parse_repo_config("knowledge:\n  retrieval:\n    cutStrategy: bogus\n")
    assert parsed.config.knowledge.retrieval.cut_strategy is None
    assert [w.section for w in parsed.warnings] == ["knowledge"]
    assert "cutStrategy" in " ".join(parsed.warnings[0].issues)


def test_out_of_bounds_calibration_is_a_section_warning() -> None:
    parsed = parse_repo_config("knowledge:\n  retrieval:\n    calibration:\n      headCeiling: 5\n")
    assert parsed.config.knowledge.retrieval.calibration is None
    assert "headCeiling" in " ".join(parsed.warnings[0].issues)
