"""The daily spend cap's pure decisions: which cap applies, refuse or run, the notice, the settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kodiai.handler_kit.deps import OperatorCaps
from kodiai.settings import Settings, SettingsError, parse_spend_cap_overrides
from kodiai.spend_cap.policy import (
    CapDecision,
    Spend,
    decide,
    refusal_comment,
    repo_cap,
    spend_cap_marker,
    utc_day,
)


def test_operator_cap_default_override_and_zero_means_none() -> None:
    caps = OperatorCaps(10.0, {7: 50.0, 8: 0.0})
    assert caps.for_installation(1) == 10.0
    assert caps.for_installation(7) == 50.0
    assert caps.for_installation(8) is None  # an override of 0 exempts one installation
    assert OperatorCaps().for_installation(1) is None
    assert OperatorCaps(0.0, {7: 5.0}).for_installation(7) == 5.0
    assert repo_cap(None) is None and repo_cap(0.0) is None and repo_cap(2.5) == 2.5


@pytest.mark.parametrize(
    ("operator", "repository", "spend", "expected"),
    [
        (None, None, None, CapDecision(True)),  # no cap: nothing read, nothing refused
        (10.0, None, Spend(9.99, 9.99), CapDecision(True)),
        (10.0, None, Spend(10.0, 0.0), CapDecision(False, "installation-cap", 10.0, 10.0)),
        (10.0, None, Spend(12.0, 0.0), CapDecision(False, "installation-cap", 10.0, 12.0)),
        (10.0, 2.0, Spend(3.0, 2.0), CapDecision(False, "repo-cap", 2.0, 2.0)),  # lowered by the repo
        (10.0, 2.0, Spend(3.0, 1.0), CapDecision(True)),  # other repos' spend is not the repo's
        (10.0, 100.0, Spend(10.0, 10.0), CapDecision(False, "installation-cap", 10.0, 10.0)),  # not raised
        (None, 2.0, Spend(0.0, 2.0), CapDecision(False, "repo-cap", 2.0, 2.0)),  # a repo may cap itself
        (10.0, None, None, CapDecision(False, "unreadable", 10.0)),  # a cap that cannot be checked refuses
        (None, 2.0, None, CapDecision(False, "unreadable", 2.0)),
    ],
)
def test_decide(
    operator: float | None, repository: float | None, spend: Spend | None, expected: CapDecision
) -> None:
    assert decide(operator, repository, spend) == expected


def test_utc_day_of_an_offset_clock() -> None:
    late = datetime(2031, 5, 6, 23, 30, tzinfo=timezone(timedelta(hours=-5)))  # 04:30 UTC on the 7th
    day = utc_day(late)
    assert (day.start, day.end, day.label) == (
        datetime(2031, 5, 7, tzinfo=UTC),
        datetime(2031, 5, 8, tzinfo=UTC),
        "2031-05-07",
    )


def test_notice_names_the_figures_the_reset_and_carries_the_day_marker() -> None:
    now = datetime(2031, 5, 6, 18, 47, 30, tzinfo=UTC)
    day = utc_day(now)
    body = refusal_comment(CapDecision(False, "installation-cap", 25.0, 25.1234), day, now)
    assert "daily spend cap is reached" in body
    assert "has spent $25.12 today (UTC); its daily cap is $25.00" in body
    assert "resets at 2031-05-07 00:00 UTC, in 5 h 13 min" in body
    assert (
        body.endswith(spend_cap_marker(day))
        and spend_cap_marker(day) == "<!-- kodiai:spend-cap:2031-05-06 -->"
    )
    repo = refusal_comment(CapDecision(False, "repo-cap", 0.005, 0.006), day, now)
    assert "This repository has spent $0.0060" in repo and "`telemetry.dailySpendCapUsd`" in repo
    unreadable = refusal_comment(CapDecision(False, "unreadable", 25.0), day, now)
    assert "could not be checked" in unreadable and "Spend cap check failed" in unreadable


def test_overrides_parse_and_reject_with_the_bad_pair() -> None:
    assert parse_spend_cap_overrides(" 12345:50, 678:10.5 ,,9:0") == {12345: 50.0, 678: 10.5, 9: 0.0}
    assert parse_spend_cap_overrides("") == {}
    for bad in ("12345=50", "abc:5", "12:", "12:x"):
        with pytest.raises(ValueError, match="installation_id:usd"):
            parse_spend_cap_overrides(bad)
    with pytest.raises(ValueError, match=">= 0"):
        parse_spend_cap_overrides("12:-1")


def test_settings_read_the_caps_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPEND_CAP_USD_PER_DAY", "20")
    monkeypatch.setenv("SPEND_CAP_USD_PER_DAY_OVERRIDES", "12345:50")
    s = Settings.load(env_file=None, require_github_app=False)
    assert (s.spend_cap_usd_per_day, s.spend_cap_usd_per_day_overrides) == (20.0, {12345: 50.0})
    monkeypatch.setenv("SPEND_CAP_USD_PER_DAY", "")
    monkeypatch.delenv("SPEND_CAP_USD_PER_DAY_OVERRIDES")
    s = Settings.load(env_file=None, require_github_app=False)
    assert (s.spend_cap_usd_per_day, s.spend_cap_usd_per_day_overrides) == (0.0, {})
    monkeypatch.setenv("SPEND_CAP_USD_PER_DAY", "-3")
    monkeypatch.setenv("SPEND_CAP_USD_PER_DAY_OVERRIDES", "1:2,oops")
    with pytest.raises(SettingsError) as err:
        Settings.load(env_file=None, require_github_app=False)
    assert [p.split(":")[0] for p in err.value.problems] == [
        "SPEND_CAP_USD_PER_DAY",
        "SPEND_CAP_USD_PER_DAY_OVERRIDES",
    ]
