"""Each retrieval metric on a tiny hand-computed fixture (a changed definition fails its test)."""

from __future__ import annotations

import math

import pytest

from kodiai.evaluation.metrics import (
    QueryJudgement,
    aggregate,
    f_beta,
    query_ndcg,
    query_precision,
    query_recall,
)


def j(
    qid: str, kept: list[str], relevant: set[str], graded: dict[str, int] | None = None, method: str = "m"
) -> QueryJudgement:
    grades = graded if graded is not None else dict.fromkeys(relevant, 2)
    return QueryJudgement(query_id=qid, kept=kept, relevant=frozenset(relevant), graded=grades, method=method)


# q1: kept a,b,x; relevant a,b,c → P 2/3, R 2/3.   q2: kept nothing; relevant d → P 0, R 0, empty.
# q3: no relevant history, kept y → abstain no.   q4: no relevant history, kept nothing → abstain yes.
FIXTURE = [
    j("q1", ["a", "b", "x"], {"a", "b", "c"}, method="headgap:gap"),
    j("q2", [], {"d"}, method="headgap:abstain"),
    j("q3", ["y"], set(), method="headgap:band"),
    j("q4", [], set(), method="headgap:abstain"),
]


def test_precision_is_a_macro_mean_over_the_queries_with_history_where_empty_counts_0() -> None:
    """(2/3 [q1] + 0 [q2, empty]) / 2: the same queries for every strategy; q3/q4 (no history) are
    judged by abstain, not by precision."""
    assert aggregate(FIXTURE).precision == pytest.approx((2 / 3 + 0) / 2)
    assert query_precision([], frozenset({"a"})) == 0.0


def test_precision_is_none_only_without_queries_with_history() -> None:
    assert aggregate([j("q", [], {"a"})]).precision == 0.0
    assert aggregate([j("q", ["a"], set())]).precision is None


def test_answering_less_cannot_raise_precision() -> None:
    """A strategy that empties its unsure answer scores lower, not higher, than one that answers."""
    sure = j("q1", ["a"], {"a"})
    answers = aggregate([sure, j("q2", ["x", "b"], {"b"})])
    abstains = aggregate([sure, j("q2", [], {"b"})])
    assert abstains.precision is not None and answers.precision is not None
    assert abstains.precision < answers.precision


def test_recall_at_5_is_normalised_by_min_relevant_5_over_queries_with_history() -> None:
    """(2/3 [q1] + 0 [q2]) / 2; a query with 8 relevant and 5 kept relevant scores 1."""
    assert aggregate(FIXTURE).recall_at_5 == pytest.approx((2 / 3 + 0) / 2)
    many = {f"r{i}" for i in range(8)}
    assert query_recall([f"r{i}" for i in range(5)], frozenset(many)) == 1.0
    assert query_recall(["a"], frozenset()) is None


def test_f_scores_are_macro_means_of_per_query_f_over_queries_with_history() -> None:
    """q1: P=R=2/3 → F=2/3; q2: empty → 0. Mean = 1/3 for both F1 and F0.5."""
    m = aggregate(FIXTURE)
    assert m.f1 == pytest.approx(1 / 3)
    assert m.f0_5 == pytest.approx(1 / 3)


def test_f_half_weighs_precision_more_than_recall() -> None:
    # P=1, R=0.5: F1 = 2/3, F0.5 = 1.25*0.5/(0.25+0.5) = 0.8333…
    m = aggregate([j("q", ["a"], {"a", "b"})])
    assert m.f1 == pytest.approx(2 / 3)
    assert m.f0_5 == pytest.approx(1.25 * 0.5 / 0.75)
    assert f_beta(0.0, 0.0, 0.5) == 0.0


def test_ndcg_at_5_uses_grades_as_gain_with_log2_discount() -> None:
    """kept [g1, x, g2] vs ideal [g2, g1]: DCG = 1/log2(2) + 2/log2(4) = 2; IDCG = 2 + 1/log2(3)."""
    graded = {"g2": 2, "g1": 1}
    value = query_ndcg(["g1", "x", "g2"], graded)
    assert value == pytest.approx(2 / (2 + 1 / math.log2(3)))
    assert query_ndcg([], graded) == 0.0
    assert query_ndcg(["a"], {}) is None


def test_ndcg_aggregate_is_over_queries_with_relevant_history() -> None:
    # q1: kept a,b (grade 2) of relevant a,b,c: DCG = 2 + 2/log2(3); IDCG = 2 + 2/log2(3) + 2/2 → ratio; q2 → 0.
    dcg = 2 + 2 / math.log2(3) + 0 / 2
    idcg = 2 + 2 / math.log2(3) + 2 / 2
    assert aggregate(FIXTURE).ndcg_at_5 == pytest.approx((dcg / idcg + 0) / 2)


def test_kept_per_query_averages_over_all_queries() -> None:
    assert aggregate(FIXTURE).kept_per_query == pytest.approx((3 + 0 + 1 + 0) / 4)


def test_empty_is_the_share_of_queries_with_history_that_got_nothing() -> None:
    assert aggregate(FIXTURE).empty == pytest.approx(1 / 2)


def test_abstain_is_the_share_of_queries_without_history_that_got_nothing() -> None:
    m = aggregate(FIXTURE)
    assert m.abstain == pytest.approx(1 / 2)
    assert aggregate([j("q", ["a"], {"a"})]).abstain is None


def test_method_distribution_is_a_share_of_all_queries() -> None:
    assert aggregate(FIXTURE).methods == {"headgap:abstain": 0.5, "headgap:band": 0.25, "headgap:gap": 0.25}


def test_counts() -> None:
    m = aggregate(FIXTURE)
    assert (m.queries, m.with_relevant, m.without_relevant) == (4, 2, 2)
