"""behaviour R4.23 / behaviour E5.11 (timeout estimator, TE-01…TE-17) and its rounding traps."""

from __future__ import annotations

from kodiai.review.timeout import compute_language_complexity, estimate_timeout_risk


def test_te_01_empty_language_map() -> None:
    assert compute_language_complexity({}) == 0.3


def test_te_02_typescript_only() -> None:
    assert compute_language_complexity({"TypeScript": ["a.ts", "b.ts"]}) == 0.4


def test_te_03_c_only() -> None:
    assert compute_language_complexity({"C": ["a.c"]}) == 1.0


def test_te_04_weighted_mean() -> None:
    assert abs(compute_language_complexity({"TypeScript": ["a.ts", "b.ts"], "C": ["c.c"]}) - 0.6) < 1e-12


def test_te_05_unknown_language() -> None:
    assert compute_language_complexity({"Haskell": ["a.hs"]}) == 0.3


def test_te_06_within_unit_interval() -> None:
    value = compute_language_complexity({"C++": [f"f{i}.cpp" for i in range(5)]})
    assert 0 <= value <= 1


def test_te_07_small_pr_is_low() -> None:
    est = estimate_timeout_risk(3, 50, 0.4, False, 600)
    assert est.risk_level == "low" and est.dynamic_timeout_seconds < 600
    assert est.should_reduce_scope is False and est.reduced_file_count is None
    assert est.dynamic_timeout_seconds == 358, "R2.5 vector"
    assert est.reasoning.startswith("Complexity score: 0.10")


def test_te_08_medium() -> None:
    est = estimate_timeout_risk(30, 800, 0.6, False, 600)
    assert est.risk_level == "medium" and est.should_reduce_scope is False


def test_te_09_high() -> None:
    est = estimate_timeout_risk(80, 2000, 1.0, True, 600)
    assert est.risk_level == "high" and est.should_reduce_scope is True
    assert est.reduced_file_count == 50 and est.dynamic_timeout_seconds > 600


def test_te_10_zero_files() -> None:
    est = estimate_timeout_risk(0, 0, 0.3, False, 600)
    assert est.risk_level == "low" and est.should_reduce_scope is False


def test_te_11_never_below_30() -> None:
    assert estimate_timeout_risk(0, 0, 0, False, 30).dynamic_timeout_seconds >= 30


def test_te_12_never_above_1800() -> None:
    assert estimate_timeout_risk(10_000, 1_000_000, 1.0, True, 1800).dynamic_timeout_seconds <= 1800


def test_te_13_small_below_large() -> None:
    small = estimate_timeout_risk(2, 20, 0.3, False, 600)
    large = estimate_timeout_risk(150, 8000, 0.9, True, 600)
    assert small.dynamic_timeout_seconds < large.dynamic_timeout_seconds


def test_te_14_reduced_count_capped_at_50() -> None:
    assert estimate_timeout_risk(120, 3000, 0.8, True, 600).reduced_file_count == 50


def test_te_15_reduced_count_is_file_count_when_smaller() -> None:
    est = estimate_timeout_risk(45, 4000, 1.0, False, 600)
    assert est.risk_level == "high" and est.reduced_file_count == 45
    assert est.reasoning.startswith("Complexity score: 0.70")


def test_te_16_reasoning_text() -> None:
    est = estimate_timeout_risk(10, 200, 0.5, False, 600)
    for part in (
        "files: 10",
        "lines: 200",
        "lang risk: 50%",
        est.risk_level,
        f"{est.dynamic_timeout_seconds}s",
    ):
        assert part in est.reasoning
    assert est.reasoning == (
        "Complexity score: 0.16 (files: 10, lines: 200, lang risk: 50%). Risk level: low. "
        "Dynamic timeout: 394s (base: 600s)."
    )


def test_te_17_integer_timeout() -> None:
    est = estimate_timeout_risk(17, 333, 0.47, False, 599)
    assert isinstance(est.dynamic_timeout_seconds, int)


def test_trap_to_fixed_ties_round_half_up() -> None:
    """``(0.125).toFixed(2)`` is "0.13" in JS; Python's round gives 0.12."""
    est = estimate_timeout_risk(0, 0, 0.625, False, 600)  # complexity 0.2*0.625 = 0.125
    assert est.reasoning.startswith("Complexity score: 0.13 ")


def test_trap_math_round_ties_go_up() -> None:
    """``Math.round(150.5)`` is 151 (base 301 × 0.5) and ``Math.round(12.5)`` is 13 for the lang %."""
    assert estimate_timeout_risk(0, 0, 0, False, 301).dynamic_timeout_seconds == 151
    assert "lang risk: 13%" in estimate_timeout_risk(0, 0, 0.125, False, 600).reasoning


def test_trap_numbers_are_interpolated_the_js_way() -> None:
    assert "(base: 599.5s)" in estimate_timeout_risk(1, 1, 0.3, False, 599.5).reasoning
