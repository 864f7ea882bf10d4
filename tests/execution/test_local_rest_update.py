"""``kodiai review`` records what the bot would post; the comment tool's ownership check (a pinned-target
port deviation) looks the comment up first, so the recording API answers that lookup for its own comments."""

from __future__ import annotations

from exec_tool_calls import call, payload, text

from kodiai.execution.local_rest import RecordingGitHub
from kodiai.execution.pacing import PacingPolicy, WritePacer
from kodiai.execution.tools import PublishFlag, ToolEnv
from kodiai.execution.tools.comment_server import comment_tools


def local_env(recorder: RecordingGitHub) -> ToolEnv:
    return ToolEnv(
        owner="local",
        repo="repo",
        client_factory=None,
        rest_factory=recorder.rest,
        pacer=WritePacer(PacingPolicy(min_write_interval=0.0)),
        publish=PublishFlag(),
        bot_handles=["kodiai", "claude"],
        pr_number=7,
    )


async def test_a_local_review_updates_its_own_recorded_comment() -> None:
    recorder = RecordingGitHub(7, "abc123")
    tools = comment_tools(local_env(recorder))
    created = payload(await call(tools, "create_comment", {"issueNumber": 7, "body": "First draft."}))
    updated = await call(tools, "update_comment", {"commentId": created["comment_id"], "body": "Final."})
    assert not updated.get("is_error"), text(updated)
    assert [c["body"] for c in recorder.issue_comments] == ["Final."]


async def test_an_unknown_comment_is_not_updated() -> None:
    recorder = RecordingGitHub(7, "abc123")
    result = await call(comment_tools(local_env(recorder)), "update_comment", {"commentId": 99, "body": "x"})
    assert result.get("is_error") and recorder.issue_comments == []
