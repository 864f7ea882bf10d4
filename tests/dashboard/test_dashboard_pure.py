"""The dashboard's pure pieces: CSV export cells a spreadsheet would run, charts' text alternative, the
percentile rule and the scope a viewer gets."""

from __future__ import annotations

from datetime import UTC, date, datetime

from kodiai.dashboard.charts import bar_chart, stacked_columns
from kodiai.dashboard.pages import every_day
from kodiai.dashboard.scope import Access, narrow_to_installation, scope_for
from kodiai.dashboard.stats import percentile
from kodiai.dashboard.tables import Table, to_csv


def test_csv_export_neutralises_formulas() -> None:
    table = Table("t", "T", ("title", "n"), [('=HYPERLINK("http://x")', 1), ("-1+2", 2), ("plain", None)])
    lines = to_csv(table).split("\r\n")
    assert lines[1].startswith("\"'=HYPERLINK") and lines[2] == "'-1+2,2" and lines[3] == "plain,"


def test_charts_carry_their_numbers_as_text_and_escape_labels() -> None:
    svg = str(bar_chart("c", "Findings", [("<b>major</b>", 3), ("minor", 1.5)]))
    assert '<title id="c-t">Findings</title>' in svg and "&lt;b&gt;major&lt;/b&gt;: 3; minor: 1.50" in svg
    assert "<b>" not in svg and "style=" not in svg and "<script" not in svg
    share = str(bar_chart("p", "Precision per repository (%)", [("acme/api", 28.6)], unit=" %"))
    assert "acme/api: 28.60 %</desc>" in share and 'class="value">28.60 %</text>' in share  # the unit at the bar
    columns = str(
        stacked_columns(
            "d", "Per day", [("2026-01-01", {"adaptive": 2, "abstain": 1})], ["abstain", "adaptive"]
        )
    )
    assert "2026-01-01: abstain 1, adaptive 2" in columns


def test_percentile_is_a_value_that_occurred() -> None:
    assert percentile([], 50) is None
    assert percentile([5, 1, 3, 2, 4], 50) == 3 and percentile(list(range(1, 21)), 95) == 19


def test_scope_never_widens_past_the_viewer() -> None:
    now = datetime(2026, 1, 31, tzinfo=UTC)
    alice = Access("alice", repos=frozenset({"acme/api"}), installations=frozenset({1}))
    assert scope_for(alice, repo=None, range_key="7d", now=now).repos == ("acme/api",)
    assert scope_for(alice, repo="ACME/API", range_key=None, now=now).repos == ("acme/api",)
    assert scope_for(alice, repo="acme/web", range_key=None, now=now).repo_sql() == (" AND 1 = 0", [])
    assert scope_for(Access("bob"), repo=None, range_key="bogus", now=now).since == "2026-01-01 00:00:00"
    assert scope_for(Access("op", operator=True), repo=None, range_key="1d", now=now).repo_sql() == ("", [])


def test_installation_filter_keeps_to_the_viewer_and_the_installation() -> None:
    now = datetime(2026, 1, 31, tzinfo=UTC)
    alice = Access(
        "alice",
        repos=frozenset({"acme/api", "beta/app"}),
        installations=frozenset({1, 2}),
        installation_repos=((1, ("acme/api",)), (2, ("beta/app",))),
    )
    everything = scope_for(alice, repo=None, range_key=None, now=now)
    one = narrow_to_installation(everything, alice, 2, ["acme/api"])  # a user's own list wins over `known`
    assert (one.repos, one.installations) == (("beta/app",), (2,))
    other = narrow_to_installation(everything, alice, 3, ["x/y"])
    assert (other.repos, other.installations) == ((), ())
    operator = Access("op", operator=True)
    ledger = narrow_to_installation(
        scope_for(operator, repo=None, range_key=None, now=now), operator, 9, ["a/b"]
    )
    assert (ledger.repos, ledger.installations) == (("a/b",), (9,))


def test_chart_series_get_a_column_for_every_day_of_the_range() -> None:
    scope = scope_for(
        Access("op", operator=True), repo=None, range_key="7d", now=datetime(2026, 1, 8, tzinfo=UTC)
    )
    filled = every_day([("2026-01-03", {"a": 2})], scope, today=date(2026, 1, 8))
    assert [d for d, _ in filled] == [f"2026-01-0{i}" for i in range(1, 9)]
    assert dict(filled)["2026-01-03"] == {"a": 2} and dict(filled)["2026-01-04"] == {}
