"""The outbound secret scanner (pure): each detector, the server's own values, redaction, real text."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kodiai.outbound import SecretRegistry
from kodiai.text.secret_scan import (
    MIN_KNOWN_SECRET_LENGTH,
    REDACTION_MARKER,
    SERVER_SECRET,
    KnownSecrets,
    find_high_entropy_token,
    first_secret_detector,
    redact_strings,
    redact_text,
    scan_text,
    secret_forms,
)
from support.fake_github import generate_private_key_pem
from support.vectors import SHARED

PEM = generate_private_key_pem()
PEM_LINES = PEM.strip().splitlines()
GHS = "ghs_" + "Q7w1E9r3T5y7U2i4O6p8A0s1D3f5G7h9J2k4"
WEBHOOK_SECRET = "whsec-Zt8#q2 Lm9!v4"


def known(*values: str, token: bool = False) -> KnownSecrets:
    return KnownSecrets.of(form for value in values for form in secret_forms(value, access_token=token))


@pytest.mark.parametrize(
    ("text", "detector"),
    [
        (PEM, "private-key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n", "private-key"),
        ("AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
        ("ASIAIOSFODNN7EXAMPLE", "aws-temporary-access-key"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-access-key"),
        ("ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8", "github-pat"),
        (GHS, "github-token"),
        ("gho_" + "x" * 36, "github-token"),
        ("ghu_" + "y" * 36, "github-token"),
        ("ghr_" + "z" * 36, "github-refresh-token"),
        ("github_pat_11ABCDEFG0" + "a" * 12 + "_" + "b" * 59, "github-fine-grained-pat"),
        ("sk-ant-api03-" + "k" * 40, "anthropic-key"),
        ("xoxb-1234567890-abcdef", "slack-token"),
        ("https://x-access-token:abc@github.com/o/r.git", "github-x-access-token-url"),
    ],
)
def test_each_detector_redacts_its_token(text: str, detector: str) -> None:
    body = f"Here you go:\n{text}\nHope that helps."
    redacted, names = redact_text(body)
    assert detector in names
    assert text.strip() not in redacted and REDACTION_MARKER in redacted
    assert redacted.startswith("Here you go:\n") and redacted.endswith("Hope that helps.")


def test_a_private_key_is_redacted_as_a_whole_block_even_when_cut_off() -> None:
    cut = "\n".join(PEM_LINES[:6])
    redacted, _ = redact_text(f"key:\n{cut}\nThe rest is on the server.")
    assert redacted == f"key:\n{REDACTION_MARKER}\nThe rest is on the server."
    full, _ = redact_text(f"a {PEM} b")
    assert full == f"a {REDACTION_MARKER}\n b"


def test_server_values_by_exact_match_and_their_base64_forms() -> None:
    values = known(WEBHOOK_SECRET)
    for text in (WEBHOOK_SECRET, base64.b64encode(WEBHOOK_SECRET.encode()).decode()):
        redacted, names = redact_text(f"secret is <{text}>", values)
        assert (redacted, names) == (f"secret is <{REDACTION_MARKER}>", (SERVER_SECRET,))
    basic = base64.b64encode(f"x-access-token:{GHS}".encode()).decode()
    redacted, names = redact_text(f"Authorization: basic {basic}", known(GHS, token=True))
    assert basic not in redacted and names == (SERVER_SECRET,)


def test_each_line_and_any_rewrapped_piece_of_the_app_key_body_is_found() -> None:
    values = known(PEM)
    one_line = PEM_LINES[3]
    assert first_secret_detector(f"line: {one_line}", values) == SERVER_SECRET
    body = "".join(PEM_LINES[1:-1])
    rewrapped = "\n".join(body[i : i + 76] for i in range(200, 600, 76))
    redacted, names = redact_text(rewrapped, values)
    assert names == (SERVER_SECRET,)
    assert all(line not in redacted for line in rewrapped.splitlines())
    b64 = base64.b64encode(PEM.encode()).decode()  # GITHUB_PRIVATE_KEY_BASE64 as given
    assert redact_text(f"k: {b64}", known(b64))[0] == f"k: {REDACTION_MARKER}"


def test_short_or_empty_known_values_are_ignored() -> None:
    values = known("", "a", "secret", "x" * (MIN_KNOWN_SECRET_LENGTH - 1))
    assert not values
    text = "a secret xxxxxxxxxxx in ordinary words"
    assert redact_text(text, values) == (text, ())


def test_known_secrets_never_print_their_values() -> None:
    values = known(WEBHOOK_SECRET)
    assert WEBHOOK_SECRET not in repr(values) and "values=" in repr(values)


def test_redact_strings_walks_json_bodies_and_keeps_clean_ones_identical() -> None:
    body: dict[str, Any] = {
        "event": "COMMENT",
        "body": f"token {GHS}",
        "comments": [{"path": "a.py", "line": 3, "body": "fine"}, {"path": "b.py", "body": PEM}],
    }
    redacted, names = redact_strings(body, KnownSecrets())
    assert names == ("github-token", "private-key")
    assert redacted["body"] == f"token {REDACTION_MARKER}"
    assert redacted["comments"][0] == {"path": "a.py", "line": 3, "body": "fine"}
    assert redacted["comments"][1]["body"] == REDACTION_MARKER + "\n"
    clean = {"body": "nothing here", "comments": [{"body": "ok"}]}
    assert redact_strings(clean)[0] is clean


def test_hits_never_carry_the_value() -> None:
    [hit] = scan_text(f"x {GHS} y")
    assert set(vars(hit)) == {"detector", "start", "end"}


def test_registry_keeps_tokens_until_they_expire_and_undoes_static_values() -> None:
    now = [1_000_000.0]
    registry = SecretRegistry(clock=lambda: now[0])
    undo = registry.add([WEBHOOK_SECRET])
    registry.add_token(GHS, datetime.fromtimestamp(now[0] + 3600, UTC))
    snapshot = registry.snapshot()
    assert WEBHOOK_SECRET in snapshot.values and GHS in snapshot.values
    now[0] += 3601
    assert GHS not in registry.snapshot().values  # an expired token is worthless and dropped
    undo()
    assert not registry.snapshot()
    twice = [registry.add([WEBHOOK_SECRET]), registry.add([WEBHOOK_SECRET])]
    twice[0]()
    assert WEBHOOK_SECRET in registry.snapshot().values  # still registered by the other holder
    twice[1]()
    assert not registry.snapshot()


# ---- no false positives on real text -------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


#: Parity vectors that plant tokens on purpose (to test the original's redaction): not "real" text.
_PLANTED = {"sanitize_content", "sanitize_outgoing_mentions", "format_error_comment"}


def _vector_strings(planted: bool) -> list[str]:
    texts: list[str] = []
    for path in sorted((SHARED / "parity-vectors").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            case = json.loads(line)
            if (case["fn"] in _PLANTED) == planted:
                texts += _strings(case)
    return [t for t in texts if t]


def _real_texts() -> list[str]:
    """Every string of GitHub's own webhook payload examples (comment, review, PR and issue bodies,
    titles, node ids, URLs), of the parity vectors (diffs, findings, review comments, summaries), and
    this project's own code and docs."""
    texts = [
        s
        for path in sorted((SHARED / "fixtures" / "webhooks").glob("*.json"))
        for s in _strings(json.loads(path.read_text()))
    ]
    texts += _vector_strings(planted=False)
    root = Path(__file__).resolve().parents[2]
    texts += [path.read_text() for path in sorted((root / "src" / "kodiai").rglob("*.py"))]
    texts += [path.read_text() for path in sorted((root / "docs").rglob("*.md"))]
    return [t for t in texts if t]


def test_no_false_positive_on_real_comment_bodies_and_code() -> None:
    texts = sorted(set(_real_texts()))
    assert len(texts) > 30_000
    app_key = known(PEM, WEBHOOK_SECRET)
    flagged = [t[:80] for t in texts if scan_text(t, app_key)]
    assert flagged == []
    # ...which the entropy heuristic would not give: GitHub node ids look random (kept for files only)
    assert any(find_high_entropy_token(t.splitlines()) for t in texts)


def test_planted_tokens_in_the_parity_vectors_are_all_found_and_nothing_else() -> None:
    prefixes = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")
    hits = [(t, hit) for t in _vector_strings(planted=True) for hit in scan_text(t)]
    assert len(hits) > 100
    assert all(t[hit.start : hit.end].startswith(prefixes) for t, hit in hits)
