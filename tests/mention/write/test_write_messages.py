"""Write-mode texts: commit message and marker, bot PR, conflict errors, the policy error as an R15 refusal."""

from __future__ import annotations

from collections.abc import Sequence

from kodiai.github.branch_names import validate_branch_name
from kodiai.github.workspace import GitCommandError
from kodiai.mention.intent import build_write_branch_name, build_write_output_key
from kodiai.mention.replies import write_refusal_reply
from kodiai.mention.write.messages import (
    build_bot_pr_body,
    build_bot_pr_title,
    build_commit_message,
    has_write_output_marker,
    is_branch_conflict_error,
    policy_refusal,
)
from kodiai.mention.write.policy import WritePolicyError, find_write_policy_violation

KEY = "kodiai-write-output:v1:inst-42:acme/repo:pr-101:comment-555:keyword-apply"


def test_the_bot_branch_of_a_write_key_is_a_valid_push_ref() -> None:
    key = build_write_output_key(
        installation_id=42, owner=" Acme ", repo="REPO", pr_number=101, comment_id=555, keyword="Apply "
    )
    assert key == KEY
    branch = build_write_branch_name(pr_number=101, comment_id=555, write_output_key=key)
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


def refusal(err: WritePolicyError | None, allow_paths: Sequence[str] = ()) -> str:
    assert err is not None
    return write_refusal_reply(policy_refusal(err), allow_paths)


def test_refusal_for_a_denied_path() -> None:
    err = find_write_policy_violation(["README.md"], {}, ["README.md"], (), True)
    text = refusal(err)
    assert (
        "Write request refused.\n\nReason: write-policy-denied-path\nRule: denyPaths\nFile: README.md\n"
        "Matched pattern: README.md\n\nWrite blocked: denied path staged: README.md\n"
    ) in text


def test_refusal_for_a_path_outside_the_allow_list() -> None:
    err = find_write_policy_violation(["README.md"], {}, (), ["src/"], True)
    text = refusal(err, ["src/"])
    assert "Reason: write-policy-not-allowed\nRule: allowPaths\nFile: README.md\n" in text
    assert "Smallest config change" in text and "    - 'README.md'" in text
    assert "Current allowPaths: 'src/'" in text


def test_refusal_for_a_secret_and_for_no_changes() -> None:
    err = find_write_policy_violation(["README.md"], {"README.md": ["ghp_" + "a" * 36]}, (), (), True)
    text = refusal(err)
    assert "Reason: write-policy-secret-detected\nRule: secretScan\nFile: README.md\n" in text
    assert "Detector: regex:github-pat" in text and "Matched pattern" not in text
    text = refusal(find_write_policy_violation([], {}, (), (), True))
    assert "Reason: write-policy-no-changes\n\nNo staged changes to commit" in text
