"""`reviews.config_snapshot` text (behaviour R1 step 48, X-22)."""

from __future__ import annotations

import json

from kodiai.config import config_snapshot, parse_repo_config


def test_x_22_snapshot_key_order_compact_and_profile_omitted_when_unset() -> None:
    """X-22: key order mode, severityMinLevel, focusAreas, maxComments, suppressionCount, minConfidence,
    profile, shareGlobal; profile omitted when unset; compact separators."""
    text = config_snapshot(parse_repo_config("").config)
    assert text == (
        '{"mode":"standard","severityMinLevel":"minor","focusAreas":[],"maxComments":7,'
        '"suppressionCount":0,"minConfidence":0,"shareGlobal":false}'
    )


def test_snapshot_uses_raw_config_values_and_profile_when_set() -> None:
    config = parse_repo_config(
        "review:\n  mode: enhanced\n  severity:\n    minLevel: major\n  focusAreas: [security, style]\n"
        "  maxComments: 7.5\n  suppressions: [a, {pattern: b}]\n  minConfidence: 40\n  profile: strict\n"
        "knowledge:\n  shareGlobal: true\n"
    ).config
    text = config_snapshot(config)
    assert text == (
        '{"mode":"enhanced","severityMinLevel":"major","focusAreas":["security","style"],"maxComments":7.5,'
        '"suppressionCount":2,"minConfidence":40,"profile":"strict","shareGlobal":true}'
    )
    assert list(json.loads(text)) == [
        "mode",
        "severityMinLevel",
        "focusAreas",
        "maxComments",
        "suppressionCount",
        "minConfidence",
        "profile",
        "shareGlobal",
    ]


def test_snapshot_formats_whole_floats_like_javascript() -> None:
    config = parse_repo_config("review:\n  maxComments: 5.0\n  minConfidence: 1e1\n").config
    assert '"maxComments":5,' in config_snapshot(config) and '"minConfidence":10,' in config_snapshot(config)
