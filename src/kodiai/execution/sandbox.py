"""What the Claude Code CLI of one run may see and inherit (pure logic; the I/O is in ``sandbox_run``).

The CLI reads a pull request that anyone may have written, and a model that read it may follow its
instructions. So the whole CLI process — and everything it starts — runs in a bubblewrap sandbox that
shows it only its workspace, a private ``/tmp``, a per-run ``HOME`` and the system directories a
program needs; in new user, PID, IPC, UTS and cgroup namespaces (the network is shared: the model
endpoint must stay reachable); as uid/gid 65534; with an environment reduced to an allow-list.

The uid: inside a user namespace created by the server's user, uid 65534 maps back to that user. The
CLI's files are therefore the server user's on disk, and what the CLI can reach is decided by the mount
namespace (what is bound at all), not by file permissions. A real separate uid (``setpriv`` before
bwrap) was rejected: write mode must edit the workspace the server cloned and later commits from, which
would need ``chown`` round trips and git ``safe.directory`` exceptions; the kernel's user-namespace code
is the boundary either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SANDBOX_UID = 65534
SANDBOX_GID = 65534
SANDBOX_USER = "kodiai-agent"
SANDBOX_HOSTNAME = "kodiai-agent"

#: The namespace and process flags: everything unshared but the network, no nested user namespaces, the
#: sandbox dies with its parent, a new session (no terminal injection), no capabilities.
NAMESPACE_FLAGS = (
    "--unshare-all",
    "--share-net",
    "--unshare-user",
    "--uid",
    str(SANDBOX_UID),
    "--gid",
    str(SANDBOX_GID),
    "--disable-userns",
    "--hostname",
    SANDBOX_HOSTNAME,
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
)

#: Top-level system directories; each is bound read-only, or re-created as the symlink it is on a
#: merged-/usr system. ``/usr`` holds the programs and libraries (and, in the image, the CLI itself).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

#: What of ``/etc`` a program needs for DNS, TLS, time zones and the dynamic linker — never the host's
#: ``passwd``/``group``/``shadow`` (a synthetic ``passwd`` and ``group`` are bound instead).
ETC_ENTRIES = (
    "resolv.conf",
    "hosts",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "services",
    "protocols",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "localtime",
    "timezone",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
)

#: Inherited variables the CLI keeps, by exact name: locale, time zone, Claude Code's own tuning, proxies
#: and CA bundles. Everything else of the server's environment is dropped.
ENV_NAMES = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "API_TIMEOUT_MS",
        "MAX_THINKING_TOKENS",
        "MAX_MCP_OUTPUT_TOKENS",
        "MCP_TIMEOUT",
        "MCP_TOOL_TIMEOUT",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "all_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        "TRACEPARENT",
        "TRACESTATE",
    }
)
#: By prefix: locale categories, the model credentials and endpoint (``ANTHROPIC_*``), Claude Code's
#: settings (``CLAUDE_CODE_*``, ``DISABLE_*``) and what the SDK itself sets on its child.
ENV_PREFIXES = ("LC_", "ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_AGENT_SDK_", "DISABLE_")
#: Only with ``CLAUDE_CODE_USE_BEDROCK``: the AWS credentials the CLI signs Bedrock calls with.
BEDROCK_PREFIXES = ("AWS_",)
#: Only with ``CLAUDE_CODE_USE_VERTEX``: the Google credentials and regions of Vertex AI.
VERTEX_NAMES = frozenset({"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"})
VERTEX_PREFIXES = ("CLOUD_ML_REGION", "VERTEX_REGION_")
#: Allowed variables whose value is a file the CLI must read (CA bundles, cloud credentials): bound
#: read-only at the same path when they exist.
FILE_VARIABLES = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)

#: Git run by the CLI itself (it reads ``git status``/``git log`` for its environment message) must
#: not run anything a workspace's ``.git/config`` names.
GIT_HARDENING = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_CONFIG_COUNT": "3",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "false",
    "GIT_CONFIG_KEY_1": "core.hooksPath",
    "GIT_CONFIG_VALUE_1": "/dev/null",
    "GIT_CONFIG_KEY_2": "protocol.allow",
    "GIT_CONFIG_VALUE_2": "never",
}


@dataclass(frozen=True)
class AgentSandbox:
    """The operator's choice: ``enabled`` unless ``AGENT_SANDBOX=off``; ``bwrap`` is a path or a name
    looked up on ``PATH``; per-run directories go under ``run_root`` (default: the system temp dir)."""

    enabled: bool = True
    bwrap: str = "bwrap"
    run_root: Path | None = None


@dataclass(frozen=True)
class EnvPolicy:
    """The allow-list of inherited variable names (exact and by prefix)."""

    names: frozenset[str]
    prefixes: tuple[str, ...]

    def allows(self, name: str) -> bool:
        return name in self.names or name.startswith(self.prefixes)


def env_policy(endpoint_names: Iterable[str]) -> EnvPolicy:
    """The allow-list for a run whose model endpoint sets ``endpoint_names`` (Bedrock and Vertex add
    their cloud credentials, and only then: an unrelated ``AWS_*`` of the server stays out)."""
    endpoint = set(endpoint_names)
    names = set(ENV_NAMES) | endpoint
    prefixes = list(ENV_PREFIXES)
    if "CLAUDE_CODE_USE_BEDROCK" in endpoint:
        prefixes += BEDROCK_PREFIXES
    if "CLAUDE_CODE_USE_VERTEX" in endpoint:
        names |= VERTEX_NAMES
        prefixes += VERTEX_PREFIXES
    return EnvPolicy(frozenset(names), tuple(prefixes))


def file_variable_paths(environ: Mapping[str, str], policy: EnvPolicy) -> list[str]:
    """Absolute paths named by allowed file variables (the caller binds those that exist)."""
    paths = []
    for name in FILE_VARIABLES:
        value = environ.get(name, "")
        if policy.allows(name) and value.startswith("/") and value not in paths:
            paths.append(value)
    return paths


@dataclass(frozen=True)
class RunLayout:
    """One run's private directory (mode 0700, outside the workspace and every data directory)."""

    run_dir: Path

    @property
    def home(self) -> Path:
        return self.run_dir / "home"

    @property
    def config_dir(self) -> Path:
        return self.home / ".claude"

    @property
    def tmp(self) -> Path:
        """``TMPDIR`` without the sandbox (inside it, ``/tmp`` is a private tmpfs)."""
        return self.run_dir / "tmp"

    @property
    def passwd(self) -> Path:
        return self.run_dir / "passwd"

    @property
    def group(self) -> Path:
        return self.run_dir / "group"

    @property
    def plan(self) -> Path:
        return self.run_dir / "plan.json"

    @property
    def launcher(self) -> Path:
        return self.run_dir / "claude"


def fixed_env(layout: RunLayout, workspace: Path, *, sandboxed: bool) -> dict[str, str]:
    """Variables every run sets itself: its own ``HOME`` and Claude config dir, temp dir, user name,
    working directory and git hardening."""
    return {
        "HOME": str(layout.home),
        "CLAUDE_CONFIG_DIR": str(layout.config_dir),
        "TMPDIR": "/tmp" if sandboxed else str(layout.tmp),
        "USER": SANDBOX_USER,
        "LOGNAME": SANDBOX_USER,
        "PWD": str(workspace),
        **GIT_HARDENING,
    }


def passwd_text(layout: RunLayout) -> str:
    """The sandbox's whole ``/etc/passwd``: its one user (the host's accounts stay hidden)."""
    return f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_GID}:Kodiai agent:{layout.home}:/usr/sbin/nologin\n"


def group_text() -> str:
    return f"{SANDBOX_USER}:x:{SANDBOX_GID}:\n"


MountKind = Literal["ro-bind", "symlink"]


@dataclass(frozen=True)
class Mount:
    kind: MountKind
    source: str
    dest: str

    def args(self) -> list[str]:
        return [f"--{self.kind}", self.source, self.dest]


def system_mounts(host: Mapping[str, str | None]) -> list[Mount]:
    """``host`` maps each present entry of :data:`SYSTEM_DIRS` to its symlink target, or ``None`` for a
    real directory (absent entries are left out)."""
    mounts = []
    for path in SYSTEM_DIRS:
        if path not in host:
            continue
        target = host[path]
        mounts.append(Mount("ro-bind", path, path) if target is None else Mount("symlink", target, path))
    return mounts


@dataclass(frozen=True)
class SandboxSpec:
    """Everything the bwrap argv of one run depends on."""

    bwrap: str
    layout: RunLayout
    workspace: Path
    write_mode: bool
    cli: Path
    system: Sequence[Mount]
    extra_files: Sequence[str] = field(default_factory=tuple)


def bwrap_argv(spec: SandboxSpec) -> list[str]:
    """The bwrap command line up to and including ``--`` (the program follows).

    Order matters: the private ``/tmp`` is mounted before the binds, so a workspace or run directory
    that lives under the host's ``/tmp`` is bound on top of it. In write mode the workspace is writable
    but its ``.git`` is re-bound read-only, so the model cannot plant hooks or config for the server's
    later git commands.
    """
    layout, ws = spec.layout, str(spec.workspace)
    argv = [spec.bwrap, *NAMESPACE_FLAGS]
    for mount in spec.system:
        argv += mount.args()
    for entry in ETC_ENTRIES:
        argv += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    argv += ["--ro-bind", str(layout.passwd), "/etc/passwd", "--ro-bind", str(layout.group), "/etc/group"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--bind", str(layout.home), str(layout.home)]
    argv += ["--ro-bind", str(spec.cli), str(spec.cli)]
    for path in spec.extra_files:
        argv += ["--ro-bind-try", path, path]
    if spec.write_mode:
        argv += ["--bind", ws, ws, "--ro-bind-try", f"{ws}/.git", f"{ws}/.git"]
    else:
        argv += ["--ro-bind", ws, ws]
    argv += ["--chdir", ws, "--"]
    return argv
