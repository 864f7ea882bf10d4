"""Write-mode texts and keys: write key and branch, commit message, bot PR, refusal reply, conflict errors."""

from __future__ import annotations

from kodiai.execution.write.messages import (
    build_bot_pr_body,
    build_bot_pr_title,
    build_commit_message,
    format_policy_refusal,
    has_write_output_marker,
    is_branch_conflict_error,
    write_branch_name,
    write_output_key,
)
from kodiai.execution.write.policy import WritePolicyError
from kodiai.github.branch_names import validate_branch_name
from kodiai.github.workspace import GitCommandError

KEY = "kodiai-write-output:v1:inst-42:acme/repo:pr-101:comment-555:keyword-apply"


def test_write_output_key_is_trimmed_and_lower_cased() -> None:
    key = write_output_key(
        installation_id=42, owner=" Acme ", repo="REPO", pr_number=101, comment_id=555, keyword="Apply "
    )
    assert key == KEY


def test_write_branch_name_vector() -> None:
    branch = write_branch_name(pr_number=101, comment_id=555, write_key=KEY)
    assert branch == "kodiai/apply/pr-101-comment-555-bd1179769078"
    assert validate_branch_name(branch) == branch


def test_commit_message_layout() -> None:
    message = build_commit_message(pr_number=7, write_key=KEY, delivery_id="d-1")
    assert message.split("\n") == [
        "kodiai: apply requested changes (pr #7)",
        "",
        f"kodiai-write-output-key: {KEY}",
        "deliveryId: d-1",
    ]
    assert has_write_output_marker(["other", f"x\n\n{message}"], KEY)
    assert not has_write_output_marker(["kodiai-write-output-key: another"], KEY)


def test_bot_pr_title_and_body() -> None:
    assert build_bot_pr_title(12) == "kodiai: apply changes for PR #12"
    body = build_bot_pr_body(
        keyword="change", request="rename foo to bar", pr_number=12, delivery_id="d-9", commit_sha="abc123"
    )
    assert body.split("\n") == [
        "Requested via mention write intent.",
        "",
        "Keyword: change",
        "",
        "Request: rename foo to bar",
        "",
        "Source PR: #12",
        "Delivery: d-9",
        "Commit: abc123",
    ]


def test_branch_conflict_classifier() -> None:
    for text in (
        "! [rejected]        HEAD -> kodiai/apply/x (non-fast-forward)",
        "Updates were rejected because the remote contains work (fetch first)",
        "fatal: a branch named 'kodiai/apply/x' already exists",
        "Reference Already Exists",
    ):
        assert is_branch_conflict_error(text)
        assert is_branch_conflict_error(GitCommandError(text))
    assert not is_branch_conflict_error("fatal: unable to access: Could not resolve host")
    assert not is_branch_conflict_error(
        WritePolicyError("write-policy-denied-path", "rejected already exists")
    )


def test_refusal_for_a_denied_path() -> None:
    err = WritePolicyError(
        "write-policy-denied-path",
        "Write blocked: denied path staged: README.md",
        rule="denyPaths",
        path="README.md",
        pattern="README.md",
    )
    lines = format_policy_refusal(err).split("\n")
    assert lines[:7] == [
        "Write request refused.",
        "",
        "Reason: write-policy-denied-path",
        "Rule: denyPaths",
        "File: README.md",
        "Matched pattern: README.md",
        "",
    ]
    assert lines[7] == "Write blocked: denied path staged: README.md"
    assert "denyPaths" in lines[-1]


def test_refusal_for_a_path_outside_the_allow_list_suggests_the_smallest_change() -> None:
    err = WritePolicyError(
        "write-policy-not-allowed",
        "Write blocked: path is not allowlisted: it's.md",
        rule="allowPaths",
        path="it's.md",
    )
    text = format_policy_refusal(err, ["src/", "lib's/"])
    assert "Reason: write-policy-not-allowed\nRule: allowPaths\nFile: it's.md\n\n" in text
    assert (
        "Smallest config change (if intended):\n```yml\nwrite:\n  allowPaths:\n    - 'it''s.md'\n```" in text
    )
    assert text.endswith("\n\nCurrent allowPaths: 'src/', 'lib''s/'")
    assert "Current allowPaths" not in format_policy_refusal(err)


def test_refusal_for_a_secret_and_for_no_changes() -> None:
    secret = WritePolicyError(
        "write-policy-secret-detected",
        "Write blocked: suspected secret detected (github-pat) in staged additions",
        rule="secretScan",
        path="README.md",
        detector="regex:github-pat",
    )
    text = format_policy_refusal(secret)
    assert "Detector: regex:github-pat" in text
    assert "No safe config bypass suggested." in text
    assert "Matched pattern" not in text
    none = format_policy_refusal(WritePolicyError("write-policy-no-changes", "No staged changes to commit"))
    assert none.startswith("Write request refused.\n\nReason: write-policy-no-changes\n\nNo staged changes")
    assert "No file changes were produced." in none
