"""The agent sandbox itself, with real bubblewrap: the per-run launcher the SDK would start runs a shell
instead of Claude Code (the same argv, mounts and environment filter), and the shell tries what a model
under injection would try. Plus the pure parts: the tool surface, the env allow-list, the bwrap argv."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest
from sandbox_helpers import DATA_SENTINEL, ENV_SENTINEL, SIBLING_SENTINEL, Machine, build_machine
from structlog.testing import capture_logs

from kodiai.execution.options import tool_lists, web_rules
from kodiai.execution.sandbox import (
    AgentSandbox,
    RunLayout,
    SandboxSpec,
    bwrap_argv,
    env_policy,
    file_variable_paths,
    system_mounts,
)
from kodiai.execution.sandbox_launch import child_env
from kodiai.execution.sandbox_run import (
    SandboxUnavailable,
    agent_run,
    log_startup_status,
    make_layout,
    startup_check,
)
from kodiai.execution.types import ExecutionContext
from kodiai.github.workspace import WorkspaceManager
from kodiai.server.composition import agent_sandbox
from kodiai.settings import Settings

SYSTEM_TOP = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "tmp"}
PROBES = {
    "id": "id -u; id -g",
    "passwd": "cat /etc/passwd",
    "env": "env",
    "pid1_environ": "tr '\\0' '\\n' < /proc/1/environ",
    "self_environ": "cat /proc/self/environ | tr '\\0' '\\n'",
    "server_environ": "cat /proc/{server_pid}/environ",
    "proc": "ls /proc",
    "data_abs": "cat {data}/.env",
    "data_dotdot": "cat ../../data/.env",
    "symlink": "cat leak",
    "sibling": "cat ../other-repo/secret.txt",
    "sibling_ls": "ls ..",
    "root_ls": "ls -a /",
    "tmp_ls": "ls -a /tmp",
    "touch_ws": "touch new-file && echo created",
    "git_config": "echo '[core] fsmonitor = evil' >> .git/config && echo appended",
    "home_write": "touch $HOME/x && echo home-writable",
    "userns": "unshare -U true && echo nested-userns",
}


def run_shell(machine: Machine, *, write_mode: bool = False, enabled: bool = True) -> dict[str, str]:
    """Run every probe through a real run's launcher; each probe's output and exit status by name."""
    script = "".join(
        f"echo '=== {name}'; ( {cmd.format(data=machine.data, server_pid=os.getpid())} ) 2>&1; echo \"rc=$?\";"
        for name, cmd in PROBES.items()
    )

    async def scenario() -> str:
        sandbox = AgentSandbox(enabled=enabled, run_root=machine.runs)
        async with agent_run(
            sandbox, workspace=machine.workspace, write_mode=write_mode, cli_path="/bin/sh", endpoint_names=[]
        ) as run:
            env = {**os.environ, "KODIAI_SENTINEL": ENV_SENTINEL, "ANTHROPIC_API_KEY": "sk-ant-model-key"}
            done = subprocess.run(
                [str(run.launcher), "-c", script],
                cwd=machine.workspace,
                env=env,
                capture_output=True,
                text=True,
            )
            assert not done.stderr, done.stderr
            return done.stdout

    out = anyio.run(scenario)
    sections = {}
    for chunk in out.split("=== ")[1:]:
        name, _, body = chunk.partition("\n")
        sections[name] = body
    return sections


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return build_machine(tmp_path)


def failed(section: str) -> bool:
    return "rc=0" not in section


def test_review_sandbox_hides_the_machine(machine: Machine) -> None:
    """Review mode: nothing outside the workspace is reachable, the workspace is read-only, the process
    is uid 65534 without capabilities in its own PID namespace, and the environment is the allow-list
    (also in bwrap's PID 1, whose environment a plain ``--clearenv`` would leave intact)."""
    out = run_shell(machine)
    assert out["id"].split()[:2] == ["65534", "65534"]
    assert "root:" not in out["passwd"] and out["passwd"].startswith("kodiai-agent:x:65534:65534:")
    for name in ("env", "pid1_environ", "self_environ"):
        assert ENV_SENTINEL not in out[name] and "KODIAI_SENTINEL" not in out[name], name
        assert "ANTHROPIC_API_KEY=sk-ant-model-key" in out[name], name  # the model credentials do pass
        assert "GIT_CONFIG_KEY_0=core.fsmonitor" in out[name]
    for name in ("server_environ", "data_abs", "data_dotdot", "symlink", "sibling"):
        assert failed(out[name]), (name, out[name])
        assert DATA_SENTINEL not in out[name] and SIBLING_SENTINEL not in out[name]
    pids = [p for p in out["proc"].split() if p.isdigit()]
    assert str(os.getpid()) not in pids and len(pids) <= 4, pids
    assert out["sibling_ls"].split()[:1] == ["this-repo"] and "other-repo" not in out["sibling_ls"]
    visible = set(out["root_ls"].split()) - {".", "..", "rc=0"}
    # plus the first component of the path down to the workspace, run dir and CLI (empty parent dirs)
    assert visible <= SYSTEM_TOP | {machine.root.parts[1]}, visible
    assert "work" not in visible or machine.root.parts[1] == "work"
    assert failed(out["touch_ws"]) and "Read-only file system" in out["touch_ws"]
    assert failed(out["git_config"])
    assert "home-writable" in out["home_write"]
    assert failed(out["userns"])
    assert list(machine.runs.iterdir()) == []  # the run's HOME is gone


def test_write_mode_workspace_writable_but_git_dir_read_only(machine: Machine) -> None:
    """Write mode: the model may edit the work tree, not ``.git`` (hooks or config for the server's
    later git would run with the installation token)."""
    config_before = (machine.workspace / ".git" / "config").read_text(encoding="utf-8")
    out = run_shell(machine, write_mode=True)
    assert "created" in out["touch_ws"] and (machine.workspace / "new-file").exists()
    assert failed(out["git_config"]) and "Read-only file system" in out["git_config"]
    assert (machine.workspace / ".git" / "config").read_text(encoding="utf-8") == config_before
    assert failed(out["data_abs"]) and failed(out["sibling"])


def test_sandbox_off_still_filters_environment_and_uses_private_home(machine: Machine) -> None:
    """``AGENT_SANDBOX=off``: no confinement (the data directory is readable: that is the risk the
    operator takes), but the environment is still the allow-list and HOME is the run's own."""
    out = run_shell(machine, enabled=False)
    assert ENV_SENTINEL not in out["env"] and "ANTHROPIC_API_KEY=sk-ant-model-key" in out["env"]
    home = next(line for line in out["env"].splitlines() if line.startswith("HOME="))[5:]
    assert Path(home).parent.parent == machine.runs.resolve()
    assert "home-writable" in out["home_write"]
    assert DATA_SENTINEL in out["data_abs"]
    assert list(machine.runs.iterdir()) == []


def test_missing_bwrap_fails_closed_and_cleans_up(machine: Machine) -> None:
    sandbox = AgentSandbox(bwrap=str(machine.root / "no-such-bwrap"), run_root=machine.runs)

    async def scenario() -> None:
        async with agent_run(
            sandbox, workspace=machine.workspace, write_mode=False, cli_path="/bin/sh", endpoint_names=[]
        ):
            raise AssertionError("the run must not start")

    with pytest.raises(
        SandboxUnavailable, match=r"agent sandbox unavailable: cannot execute .*no-such-bwrap"
    ):
        anyio.run(scenario)
    assert list(machine.runs.iterdir()) == []
    assert startup_check(sandbox) is not None
    assert startup_check(AgentSandbox(run_root=machine.runs)) is None


def test_launcher_drops_unlisted_variables_including_invalid_names() -> None:
    plan = {"env_names": ["PATH"], "env_prefixes": ["ANTHROPIC_"], "env_set": {"HOME": "/run/home"}}
    environ = {
        "PATH": "/usr/bin",
        "ANTHROPIC_API_KEY": "k",
        "BAD.NAME": "x",
        "GITHUB_TOKEN": "t",
        "HOME": "/root",
    }
    assert child_env(environ, plan) == {"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "k", "HOME": "/run/home"}


def test_env_policy_adds_cloud_credentials_only_for_their_endpoint() -> None:
    plain = env_policy(["ANTHROPIC_BASE_URL"])
    assert (
        plain.allows("ANTHROPIC_API_KEY")
        and plain.allows("CLAUDE_CODE_OAUTH_TOKEN")
        and plain.allows("LC_ALL")
    )
    assert not plain.allows("AWS_SECRET_ACCESS_KEY") and not plain.allows("GITHUB_PRIVATE_KEY")
    assert not plain.allows("VOYAGE_API_KEY") and not plain.allows("KODIAI_SENTINEL")
    bedrock = env_policy(["CLAUDE_CODE_USE_BEDROCK", "AWS_REGION"])
    assert bedrock.allows("AWS_SECRET_ACCESS_KEY") and bedrock.allows("AWS_REGION")
    vertex = env_policy(["CLAUDE_CODE_USE_VERTEX"])
    assert vertex.allows("GOOGLE_APPLICATION_CREDENTIALS") and not vertex.allows("AWS_ACCESS_KEY_ID")
    environ = {"GOOGLE_APPLICATION_CREDENTIALS": "/secrets/gcp.json", "SSL_CERT_FILE": "relative.pem"}
    assert file_variable_paths(environ, vertex) == ["/secrets/gcp.json"]
    assert file_variable_paths(environ, plain) == []


def test_bwrap_argv_binds_only_what_the_run_needs(tmp_path: Path) -> None:
    layout = RunLayout(tmp_path / "run")
    ws = tmp_path / "ws"
    system = system_mounts({"/usr": None, "/bin": "usr/bin", "/lib64": "usr/lib64"})
    spec = SandboxSpec("bwrap", layout, ws, False, Path("/opt/claude"), system)
    argv = bwrap_argv(spec)
    assert argv[-1] == "--" and argv[argv.index("--chdir") + 1] == str(ws)
    binds = [
        (argv[i], argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a.startswith("--") and "bind" in a
    ]
    sources = {source for _, source, _ in binds}
    assert ("--ro-bind", str(ws), str(ws)) in binds and (
        "--bind",
        str(layout.home),
        str(layout.home),
    ) in binds
    assert "/etc/passwd" not in sources and "/etc" not in sources and "/" not in sources
    assert argv.index("--tmpfs") < argv.index(str(ws)), "the workspace is bound over the private /tmp"
    writable = [
        b for b in bwrap_argv(SandboxSpec("bwrap", layout, ws, True, Path("/opt/claude"), system)) if b
    ]
    assert writable[writable.index(f"{ws}/.git") - 1] == "--ro-bind-try"


def context(**fields: object) -> ExecutionContext:
    base: dict[str, object] = {
        "workspace_dir": Path("/ws"),
        "installation_id": 1,
        "owner": "o",
        "repo": "r",
        "event_type": "pull_request.opened",
        "pr_number": 1,
    }
    return ExecutionContext(**{**base, **fields})  # type: ignore[arg-type]


def test_tool_surface_no_shell_web_only_for_listed_domains() -> None:
    allowed, denied = tool_lists(context(), ["git", "github_comment"])
    assert not any(a.startswith("Bash") for a in allowed) and "Bash" in denied
    assert {"WebFetch", "WebSearch", "Write", "Edit"} <= set(denied)
    assert "mcp__git__*" in allowed
    mention = context(event_type="issue_comment.created")
    assert {"WebFetch", "WebSearch"} <= set(tool_lists(mention, [])[1])
    allowed, denied = tool_lists(
        context(event_type="issue_comment.created", allowed_domains=("docs.python.org",)), []
    )
    assert "WebFetch(domain:docs.python.org)" in allowed and "WebSearch" in allowed
    assert "WebFetch" not in denied and "WebFetch" not in allowed
    allowed, denied = tool_lists(context(allowed_domains=("docs.python.org",)), [])  # a review: never
    assert "WebSearch" in denied
    assert web_rules(["ok.example", "bad,Bash", "x) Bash(", "*.example.org"]) == [
        "WebFetch(domain:ok.example)",
        "WebFetch(domain:*.example.org)",
        "WebSearch",
    ]
    write_allowed, write_denied = tool_lists(context(write_mode=True), [])
    assert {"Edit", "Write", "MultiEdit"} <= set(write_allowed) and write_denied[:1] == ["Bash"]


def test_startup_status_warns_when_off_and_reports_an_unusable_sandbox(tmp_path: Path) -> None:
    """Every ``kodiai serve`` start says whether runs are confined: a warning with AGENT_SANDBOX=off, an
    error (with bwrap's reason) when the sandbox cannot start, ``Agent sandbox ready`` otherwise."""
    runs = tmp_path / "runs"
    runs.mkdir()
    with capture_logs() as logs:
        assert log_startup_status(agent_sandbox(settings_with(tmp_path, "off"))) is False
        assert log_startup_status(AgentSandbox(bwrap=str(tmp_path / "absent-bwrap"), run_root=runs)) is False
        assert log_startup_status(AgentSandbox(run_root=runs)) is True
    levels = [(entry["log_level"], entry["event"].split(":")[0]) for entry in logs]
    assert levels == [
        ("warning", "Agent sandbox is OFF (AGENT_SANDBOX=off)"),
        ("error", "Agent sandbox unavailable"),
        ("info", "Agent sandbox ready"),
    ]
    assert "absent-bwrap" in logs[1]["error"]
    assert agent_sandbox(settings_with(tmp_path, "on")).enabled and list(runs.iterdir()) == []


def settings_with(tmp_path: Path, value: str) -> Settings:
    env_file = tmp_path / ".env"
    env_file.write_text(f"AGENT_SANDBOX={value}\n", encoding="utf-8")
    return Settings.load(env_file=env_file, require_github_app=False)


def test_a_killed_servers_run_directories_are_swept_at_the_next_start(tmp_path: Path) -> None:
    """Per-run directories hold the CLI's transcripts; a ``kill -9`` skips their removal. They live under
    the workspace root with the ``kodiai-`` prefix, so the start-up sweep of stale entries takes them."""

    async def no_token(_installation: int) -> str:
        return ""

    workspaces = WorkspaceManager(no_token, root=tmp_path / "workspaces")
    workspaces.root.mkdir()
    sandbox = agent_sandbox(settings_with(tmp_path, "on"), workspaces.root)
    assert sandbox.run_root == workspaces.root
    layout = make_layout(sandbox)
    left = layout.run_dir
    (layout.home / "transcript.jsonl").write_text("{}", encoding="utf-8")
    assert left.parent == workspaces.root.resolve()
    hour_ago = left.stat().st_mtime - 2 * 3600
    os.utime(left, (hour_ago, hour_ago))
    assert workspaces.cleanup_stale() == 1 and not left.exists()
