"""kodiai.github.models: the typed views of REST answers read a malformed field as missing, never fail the
whole answer, and keep only the objects of a list answer."""

from __future__ import annotations

from kodiai.github.models import (
    CollaboratorPermission,
    IssueComment,
    PullRequest,
    Reaction,
    ReviewComment,
    parse_list,
    parse_object,
)


def test_a_pull_request_reads_the_fields_features_use() -> None:
    pull = PullRequest.model_validate(
        {
            "number": 7,
            "title": "Fix",
            "user": {"login": "alice", "type": "User"},
            "head": {"ref": "fix", "sha": "abc"},
            "base": {"ref": "main", "sha": "def"},
            "labels": [{"name": "bug"}, "not-an-object"],
            "additions": 3,
            "changed_files": 0,
            "unknown": {"kept": False},
        }
    )
    assert (pull.number, pull.title, pull.head_sha, pull.changed_files) == (7, "Fix", "abc", 0)
    assert pull.user is not None and pull.user.login == "alice"
    assert pull.base is not None and pull.base.ref == "main"
    assert [label.name for label in pull.labels] == ["bug"]


def test_a_field_of_the_wrong_type_reads_as_missing() -> None:
    pull = PullRequest.model_validate(
        {"title": 5, "user": "alice", "head": ["abc"], "labels": "bug", "additions": True, "commits": "3"}
    )
    assert (pull.title, pull.user, pull.head, pull.labels, pull.additions, pull.commits) == (
        None,
        None,
        None,
        [],
        None,
        None,
    )
    assert pull.head_sha is None


def test_list_answers_keep_objects_and_a_non_list_reads_as_empty() -> None:
    data = [{"id": 1, "content": "+1", "user": {"login": "bob"}}, "x", None, {"id": "2", "content": "-1"}]
    first, second = parse_list(Reaction, data)
    assert (first.id, first.content, first.user and first.user.login) == (1, "+1", "bob")
    assert (second.id, second.content) == (None, "-1")
    assert parse_list(IssueComment, {"message": "Not Found"}) == []


def test_review_comments_carry_what_finding_extraction_reads() -> None:
    [comment] = parse_list(
        ReviewComment, [{"id": 9, "path": "a.py", "body": "b", "line": 4, "start_line": None}]
    )
    assert (comment.id, comment.path, comment.body, comment.start_line, comment.line) == (
        9,
        "a.py",
        "b",
        None,
        4,
    )


def test_an_object_answer_that_is_not_an_object_reads_as_empty() -> None:
    assert parse_object(CollaboratorPermission, {"permission": "admin"}).permission == "admin"
    assert parse_object(CollaboratorPermission, ["admin"]).permission is None
    assert parse_object(CollaboratorPermission, {"permission": 1}).permission is None
