"""The process logger: pino-style JSON lines, bound delivery ids, token redaction, LOG_LEVEL."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import structlog

from kodiai.log import bind_delivery, configure_logging, get_logger, level_from_env, redact


@pytest.fixture(autouse=True)
def _reset_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def _lines(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines() if line.strip()]


def test_json_line_uses_pino_field_names(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", json=True)
    before = int(time.time() * 1000)
    get_logger("t").info("Webhook accepted and queued for dispatch", installationId=42)
    (line,) = _lines(capsys.readouterr().err)
    assert line["msg"] == "Webhook accepted and queued for dispatch"
    assert "event" not in line
    assert line["level"] == "info" and line["installationId"] == 42
    assert isinstance(line["time"], int) and before <= line["time"] <= int(time.time() * 1000)


def test_delivery_id_is_bound_to_every_line_inside_the_block(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", json=True)
    log = get_logger("t")
    with bind_delivery("d-123", eventName="pull_request"):
        log.info("one")
        log.warning("two")
    log.info("after")
    lines = _lines(capsys.readouterr().err)
    assert [(x["msg"], x.get("delivery_id")) for x in lines] == [
        ("one", "d-123"),
        ("two", "d-123"),
        ("after", None),
    ]
    assert lines[0]["eventName"] == "pull_request"


def test_tokens_are_redacted_in_rendered_lines(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("debug", json=True)
    token = "ghs_" + "a" * 36
    get_logger("t").error("clone failed", detail=f"https://x-access-token:{token}@github.com/o/r.git")
    err = capsys.readouterr().err
    assert token not in err and "[REDACTED]" in err


@pytest.mark.parametrize(
    "secret",
    ["ghp_" + "A1" * 18, "github_pat_" + "x" * 40, "sk-ant-api03-abcdefghijkl", "Bearer abc.def-ghi"],
)
def test_redact_masks_each_token_form(secret: str) -> None:
    assert redact(f"before {secret} after") == "before [REDACTED] after"


def test_redact_leaves_ordinary_text_untouched() -> None:
    text = "a high-signal thought about ghosts"
    assert redact(text) == text


def test_lines_below_the_level_are_not_written(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("warn", json=True)
    log = get_logger("t")
    log.info("quiet")
    log.warning("loud")
    assert [x["msg"] for x in _lines(capsys.readouterr().err)] == ["loud"]


def test_unknown_log_level_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="Unknown LOG_LEVEL 'verbose'"):
        level_from_env("verbose")
    assert level_from_env("") == level_from_env("info")
