"""Issue 23 item 2: the ``git`` MCP server (``mcp__git__diff`` / ``log`` / ``show`` / ``status``) — git
without a shell: typed arguments only, paths after ``--``, the workspace's planted programs never run.

Tools are called through the real MCP server object (an MCP client session over the SDK server's
in-memory transport, as the CLI calls them) on real git repositories; one test runs the real Claude Code
CLI against the fake Anthropic API and shows the model receives the results.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kodiai.execution.pacing import PacingPolicy, WritePacer
from kodiai.execution.tools import PublishFlag, ToolEnv, build_mcp_servers
from kodiai.execution.tools.git_page import PAGE_BYTES, Pager
from support.gitrepo import commit_files, git
from support.hostile_git import LOCAL_ROLES, HostileRepo, make_remote, plain_git, plant


def tool_env(workspace: Path | None) -> ToolEnv:
    return ToolEnv(
        owner="acme",
        repo="widgets",
        client_factory=None,
        pacer=WritePacer(PacingPolicy(min_write_interval=0.0)),
        publish=PublishFlag(),
        workspace_dir=workspace,
    )


@asynccontextmanager
async def git_client(workspace: Path) -> AsyncIterator[Client]:
    servers = build_mcp_servers(tool_env(workspace))
    async with Client(servers["git"]["instance"]) as client:
        yield client


async def call(client: Client, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    """``(is_error, text)`` of one tool call."""
    result = await client.call_tool(name, args)
    return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)


def output(text: str) -> str:
    """The git output of an answer (plain text; a cut answer's note is its last line)."""
    return text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two commits; the second touches files named like options."""
    root = tmp_path / "repo"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    commit_files(root, {"app.py": "x = 1\n", "-rf": "a\n", "--output=x": "a\n"}, "initial")
    commit_files(root, {"app.py": "x = 2\n", "-rf": "b\n", "--output=x": "b\n"}, "fix: bump x")
    return root


async def test_the_four_tools_answer_with_gits_own_output(repo: Path) -> None:
    (repo / "app.py").write_text("x = 3\n", encoding="utf-8")
    async with git_client(repo) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        assert tools == ["diff", "log", "show", "status"]
        error, text = await call(client, "log", {"maxCount": 1, "oneline": True})
        assert not error and output(text).endswith(" fix: bump x\n")
        error, text = await call(client, "diff", {"revisions": ["HEAD~1", "HEAD"], "nameOnly": True})
        assert not error and output(text).split() == ["--output=x", "-rf", "app.py"]
        error, text = await call(client, "show", {"revision": "HEAD~1:app.py"})
        assert not error and output(text) == "x = 1\n"
        error, text = await call(client, "show", {"revision": "HEAD", "paths": ["app.py"], "contextLines": 0})
        assert not error and "-x = 1\n+x = 2" in output(text) and "-rf" not in output(text)
        error, text = await call(client, "status", {})
        assert not error and output(text) == "## main\n M app.py\n"
        error, text = await call(client, "diff", {})
        assert not error and "+x = 3" in output(text)


async def test_paths_that_look_like_options_are_paths(repo: Path) -> None:
    """``-rf`` and ``--output=x`` go after ``--`` as literal paths: their diffs come back, nothing is
    written anywhere."""
    async with git_client(repo) as client:
        error, text = await call(client, "diff", {"revisions": ["HEAD~1"], "paths": ["-rf", "--output=x"]})
        assert not error
        assert "diff --git a/--output=x b/--output=x" in output(text)
        assert "diff --git a/-rf b/-rf" in output(text) and "app.py" not in output(text)
        error, text = await call(client, "log", {"paths": ["--output=x"], "oneline": True})
        assert not error and len(output(text).splitlines()) == 2
    assert {p.name for p in repo.iterdir()} == {".git", "--output=x", "-rf", "app.py"}
    assert not (repo.parent / "x").exists()


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("diff", {"revisions": ["--output=x"]}, "may not start with '-'"),
        ("log", {"revision": "--output=/tmp/pwned"}, "may not start with '-'"),
        ("diff", {"revisions": ["-c", "core.pager=sh"]}, "may not start with '-'"),
        ("diff", {"revisions": ["--ext-diff"]}, "may not start with '-'"),
        ("show", {"revision": "--textconv"}, "may not start with '-'"),
        ("log", {"revision": "--exec=touch /tmp/pwned"}, "may not start with '-'"),
        ("log", {"revision": "-p"}, "may not start with '-'"),
        ("show", {"revision": "HEAD\x00--output=x"}, "without spaces or control characters"),
        ("show", {"revision": "HEAD --output=x"}, "without spaces or control characters"),
        ("log", {"revision": "HEAD\n--upload-pack=x"}, "without spaces or control characters"),
        ("log", {"revision": "H" * 5000}, "at most 256 characters"),
        ("diff", {"paths": ["a\x00b"]}, "NUL or control characters"),
        ("diff", {"paths": ["/etc/passwd"]}, "no leading '/'"),
        ("diff", {"paths": ["a" * 5000]}, "at most 4096 characters"),
        ("status", {"paths": ["p"] * 101}, "is too long"),
        ("diff", {"output": "/tmp/x"}, "output"),
        ("diff", {"extraArgs": ["--ext-diff"]}, "extraArgs"),
        ("log", {"maxCount": 201}, "200"),
        ("diff", {"contextLines": 21}, "20"),
        ("diff", {"revisions": ["a", "b", "c"]}, "is too long"),
        ("diff", {"stat": "--output=x"}, "is not of type 'boolean'"),
    ],
)
async def test_argument_validation_rejects_every_option_smuggling(
    repo: Path, tool: str, args: dict[str, Any], message: str
) -> None:
    async with git_client(repo) as client:
        error, text = await call(client, tool, args)
    assert error and message in text, text
    assert text.startswith(("Error: ", "Input validation error: "))
    assert {p.name for p in repo.iterdir()} == {".git", "--output=x", "-rf", "app.py"}
    assert not Path("/tmp/pwned").exists()


async def test_no_planted_program_runs_from_any_tool(tmp_path: Path) -> None:
    """A checkout whose ``.git`` plants fsmonitor, hooks, external diff, textconv and filters: plain git
    runs them (control); the four tools, asked for everything they can show, run none."""
    make_remote(tmp_path)
    control = tmp_path / "control"
    hardened = tmp_path / "hardened"
    for checkout in (control, hardened):
        git(
            "clone",
            "-q",
            (tmp_path / "remote" / "acme" / "widgets.git").as_uri(),
            str(checkout),
            cwd=tmp_path,
        )
    repos = {}
    for checkout in (control, hardened):
        plant(checkout, checkout.parent / f"{checkout.name}.marker")
        repos[checkout.name] = HostileRepo(dir=checkout, marker=checkout.parent / f"{checkout.name}.marker")
        (checkout / "a.x").write_text("changed\n", encoding="utf-8")

    for args in (("status",), ("diff",), ("diff", "HEAD~1", "HEAD"), ("log", "-p", "-1")):
        plain_git(control, *args)
    assert {"fsmonitor", "external-diff", "textconv", "filter-clean"} <= repos["control"].ran()

    calls: list[tuple[str, dict[str, Any]]] = [
        ("status", {}),
        ("diff", {}),
        ("diff", {"revisions": ["HEAD~1", "HEAD"]}),
        ("diff", {"revisions": ["HEAD~1"], "stat": True}),
        ("diff", {"staged": True}),
        ("log", {"patch": True, "stat": True}),
        ("show", {"revision": "HEAD"}),
        ("show", {"revision": "HEAD:a.x"}),
    ]
    async with git_client(hardened) as client:
        for name, args in calls:
            error, text = await call(client, name, args)
            assert not error, (name, args, text)
        error, text = await call(client, "diff", {"revisions": ["HEAD~1", "HEAD"], "paths": ["a.x"]})
        assert "+two" in output(text)  # git's own diff, not a driver's
    assert repos["hardened"].ran() & LOCAL_ROLES == set()


async def test_large_output_is_capped_with_a_note(repo: Path) -> None:
    (repo / "big.txt").write_text("line of text\n" * 60_000, encoding="utf-8")
    git("add", "big.txt", cwd=repo)
    async with git_client(repo) as client:
        error, text = await call(client, "diff", {"staged": True})
    body, note = text.rsplit("\n", 1)
    assert not error and note.startswith("[output cut at 40,000 bytes per call: lines 1–")
    assert len(body.encode()) <= PAGE_BYTES and len(text.encode()) < 45_000


def pages_of(text: str) -> tuple[str, int | None]:
    """``(git output, next offset)`` of one answer (None: the answer was the last part)."""
    lines = text.split("\n")
    note = lines[-1]
    found = re.search(r'"offset": (\d+)', note) if note.startswith("[output cut") else None
    if note.startswith("[output cut") or note.startswith("[end of output"):
        text = "\n".join(lines[:-1]) + "\n"
    return text, int(found.group(1)) if found else None


@pytest.fixture
def large_pr(repo: Path) -> tuple[Path, str]:
    """A commit whose diff (~120 KB, 9 files) the CLI would never hand the model whole; git's own diff."""
    files = {
        f"src/mod_{i}.py": "".join(f"value_{i}_{n} = {n}  # a changed line\n" for n in range(400))
        for i in range(8)
    }
    files["src/tiny.py"] = "y = 1\n"
    commit_files(repo, files, "feat: large")
    whole = git("diff", "--no-color", "HEAD~1", "HEAD", cwd=repo) + "\n"
    return repo, whole


async def test_a_large_diff_is_read_whole_page_by_page_as_the_note_says(large_pr: tuple[Path, str]) -> None:
    """Each answer is plain text under the CLI's limits; following each note's offset, the pages put
    together are git's diff byte for byte, and the last part says it is the end."""
    repo, whole = large_pr
    assert len(whole.encode()) > 2.5 * PAGE_BYTES
    pages: list[str] = []
    offset: int | None = 0
    async with git_client(repo) as client:
        while offset is not None:
            args: dict[str, Any] = {"revisions": ["HEAD~1", "HEAD"]}
            if offset:
                args["offset"] = offset
            error, text = await call(client, "diff", args)
            assert not error and len(text.encode()) < 45_000, text[-300:]
            body, offset = pages_of(text)
            pages.append(body)
            assert len(pages) < 10
    assert "".join(pages) == whole
    assert len(pages) >= 3 and text.endswith(" shown]")


async def test_a_cut_diffs_note_names_the_next_call_and_the_files(large_pr: tuple[Path, str]) -> None:
    """The note says exactly how to go on (the offset, or one file with ``paths``) and lists the files;
    ``stat`` lists them with full paths; one file's diff comes back whole."""
    repo, whole = large_pr
    async with git_client(repo) as client:
        _, first = await call(client, "diff", {"revisions": ["HEAD~1", "HEAD"]})
        _, stat = await call(client, "diff", {"revisions": ["HEAD~1", "HEAD"], "stat": True})
        _, one = await call(client, "diff", {"revisions": ["HEAD~1", "HEAD"], "paths": ["src/mod_3.py"]})
        _, past = await call(client, "diff", {"revisions": ["HEAD~1", "HEAD"], "offset": 99_999})
        body, offset = pages_of(first)
        _, second = await call(client, "diff", {"revisions": ["HEAD~1", "HEAD"], "offset": offset})
    note = first.rsplit("\n", 1)[1]
    assert "Files in this diff" not in second, "the list comes with the first page only"
    assert offset == body.count("\n")
    assert f'call mcp__git__diff again with the same arguments and "offset": {offset}' in note
    assert 'or read one file at a time with "paths": ["<file>"]' in note
    names = ", ".join([*(f"src/mod_{i}.py" for i in range(8)), "src/tiny.py"])
    assert note.endswith(f"Files in this diff (9): {names}.]")
    assert "this part ends in the diff of src/mod_" in note
    assert "src/mod_0.py | 400 ++++" in stat and "9 files changed, 3201 insertions(+)" in stat
    assert one == whole[whole.index("diff --git a/src/mod_3.py") : whole.index("diff --git a/src/mod_4.py")]
    assert past.startswith("Error: offset 99999 is past the end of the output (")


async def test_a_line_longer_than_a_page_is_cut_and_paging_goes_on(repo: Path) -> None:
    """A minified file: its one line is cut at the page size (on a character boundary), the note says so,
    and the next offset goes past it."""
    commit_files(repo, {"a.min.js": "é" * 30_000 + "\n", "z.txt": "next\n"}, "feat: minified")
    async with git_client(repo) as client:
        offset = 0
        texts = []
        while True:
            error, text = await call(client, "show", {"revision": "HEAD", "offset": offset})
            assert not error
            texts.append(text)
            _body, found = pages_of(text)
            if found is None:
                break
            offset = found
    cut = next(t for t in texts if "is longer than 40,000 bytes and was cut" in t)
    assert "\ufffd" not in cut and len(cut.split("\n")[0].encode()) <= PAGE_BYTES
    assert "+next" in texts[-1] and texts[-1].endswith(" shown]")


async def test_a_git_pointer_to_another_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    """``.git`` as a file (``gitdir: /elsewhere``) would read another repository on the machine."""
    elsewhere = tmp_path / "elsewhere.git"
    (repo / ".git").rename(elsewhere)
    (repo / ".git").write_text(f"gitdir: {elsewhere}\n", encoding="utf-8")
    async with git_client(repo) as client:
        error, text = await call(client, "log", {})
    assert error and text.startswith("Error: git refused:") and "no .git directory" in text


async def test_paths_through_a_committed_symlink_or_dotdot_are_refused_alike(
    repo: Path, tmp_path: Path
) -> None:
    """The tools run on the host: through a directory symlink the PR committed, ``show HEAD:link/secret``
    made git answer "exists on disk, but not in 'HEAD'" for a server file, and "does not exist" otherwise
    (a file-existence oracle). A path that leaves the workspace is refused, with one answer for both."""
    outside = tmp_path / "server-data"
    outside.mkdir()
    (outside / "sentinel.txt").write_text("secret\n", encoding="utf-8")
    (repo / "data").symlink_to(outside)
    calls = [
        ("show", {"revision": "HEAD:data/sentinel.txt"}),
        ("show", {"revision": "HEAD:data/absent.txt"}),
        ("show", {"revision": "HEAD:../server-data/sentinel.txt"}),
        ("diff", {"revisions": ["HEAD:data/sentinel.txt"]}),
        ("diff", {"paths": ["data/sentinel.txt"]}),
        ("log", {"paths": ["../server-data"]}),
        ("status", {"paths": ["data"]}),
    ]
    async with git_client(repo) as client:
        for name, args in calls:
            error, text = await call(client, name, args)
            assert error and "path leaves the workspace" in text, (name, args, text)
            assert "exists on disk" not in text and "secret" not in text
        # paths inside the workspace still work, whatever their names
        error, text = await call(client, "show", {"revision": "HEAD:app.py"})
        assert not error and "x = 2" in output(text)


def test_registered_for_every_run_with_a_workspace(tmp_path: Path) -> None:
    env = tool_env(tmp_path)
    assert "git" in build_mcp_servers(env)
    assert "git" in build_mcp_servers(env, enable_comment_tools=False, enable_inline_tools=False)
    assert "git" not in build_mcp_servers(tool_env(None))


@pytest.mark.slow
def test_the_model_gets_the_tool_results_through_the_real_cli(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kodiai review`` with the real bundled CLI and a scripted model: ``mcp__git__log`` returns the
    commit, ``mcp__git__diff`` with ``--output=…`` comes back as an error result; nothing is written."""
    from typer.testing import CliRunner

    from kodiai.cli.main import app
    from support.fake_anthropic import FAKE_API_KEY, FakeAnthropic, ScriptedConversation, Text, ToolUse

    monkeypatch.chdir(tmp_path)
    for name in ("CLAUDE_CODE_OAUTH_TOKEN", "VOYAGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LEARNING_MEMORY_URI", str(tmp_path / "absent.lance"))
    git("checkout", "-q", "-b", "topic", cwd=repo)
    commit_files(repo, {"app.py": "x = 4\n"}, "feat: four")
    pwned = tmp_path / "pwned"
    script = ScriptedConversation(
        [
            ToolUse("mcp__git__log", {"revision": "main..topic", "oneline": True}),
            ToolUse("mcp__git__diff", {"revisions": [f"--output={pwned}"]}),
        ],
        final=Text("Done."),
    )
    with FakeAnthropic(script=script) as model:
        for name, value in model.env(home=str(tmp_path / "home"), CLAUDE_CODE_MAX_RETRIES="0").items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_API_KEY)
        result = CliRunner().invoke(app, ["review", "--path", str(repo), "--base", "main", "--head", "topic"])
        requests = model.main_requests
    assert len(requests) >= 3, result.output
    log_result = requests[1].tool_results
    assert len(log_result) == 1 and not log_result[0].is_error
    assert "feat: four" in log_result[0].text and "fix: bump x" not in log_result[0].text
    diff_result = requests[2].tool_results
    assert len(diff_result) == 1 and diff_result[0].is_error
    assert "may not start with '-'" in diff_result[0].text
    assert not pwned.exists()


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_pages_are_the_same_however_git_output_arrives(chunk: int) -> None:
    """The pager skips ``offset`` lines and cuts at a line end whatever the read sizes; a line longer than a
    page is cut on a character boundary and counted as read."""
    output = b"".join(b"line %d\n" % n for n in range(40)) + "é".encode() * 20 + b"\nlast"
    pages = []
    offset: int | None = 0
    while offset is not None:
        pager = Pager(offset=offset, limit=31)
        for start in range(0, len(output), chunk):
            if pager.feed(output[start : start + chunk]):
                break
        page = pager.page()
        pages.append(page)
        offset = page.next_offset if page.more else None
    assert b"".join(p.data for p in pages if not p.cut_line) == output.replace(b"\xc3\xa9" * 20 + b"\n", b"")
    [cut] = [p for p in pages if p.cut_line]
    assert cut.data == "é".encode() * 15 and cut.first == 40 and cut.lines == 1
    assert pages[-1].data == b"last" and pages[-1].first == 41 and not pages[-1].more
    assert all(len(p.data) <= 31 and p.data.endswith(b"\n") for p in pages[:-2])
