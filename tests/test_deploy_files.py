"""deploy/kodiai.service and deploy/compose.yaml are checked by their own linters and for the essentials.

- The unit passes ``systemd-analyze verify`` (unknown keys and bad values are warnings there, so any
  output fails), and a parse asserts what operations rely on: an absolute working directory (the store
  paths default to ./data), the environment file, restart on failure, a stop that lets the server drain.
- Its hardening is replayed without systemd (a private mount namespace with the mounts each directive
  makes, then no capabilities, no new privileges and an unprivileged uid) and the server's own start-up
  sandbox probe must pass in it; covering part of /proc, as ProtectKernelTunables would, must not.
- The compose files (one process; the scale-out cluster) validate against the Compose specification's JSON
  schema (check-jsonschema's copy), and the cluster's services use the settings and roles Kodiai reads.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kodiai.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "deploy" / "kodiai.service"
COMPOSE = ROOT / "deploy" / "compose.yaml"
SCALE_OUT = ROOT / "deploy" / "compose.scale-out.yaml"

#: Directives that would stop bubblewrap: no namespaces for it, parts of /proc covered (the kernel then
#: refuses bwrap a fresh /proc), or no JIT for the Claude Code CLI.
BREAKS_BWRAP = (
    "PrivateUsers",
    "RestrictNamespaces",
    "ProtectKernelTunables",
    "ProtectKernelLogs",
    "ProtectProc",
    "ProcSubset",
    "MemoryDenyWriteExecute",
)


def unit_entries(text: str) -> Iterator[tuple[str, str, str]]:
    """(section, key, value) per line; repeated keys (Environment=) stay separate."""
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        yield section, key.strip(), value.strip()


def service() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for section, key, value in unit_entries(UNIT.read_text()):
        if section == "Service":
            out.setdefault(key, []).append(value)
    return out


def one(values: dict[str, list[str]], key: str) -> str:
    [value] = values[key]
    return value


def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing (make test installs Debian's systemd package)")
    # An alternate root with the system's units and the ExecStart binary, so that verify checks this unit
    # as installed (it refuses an ExecStart that does not exist) without touching the machine.
    root = tmp_path / "root"
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    exec_start = Path(one(service(), "ExecStart").split()[0])
    binary = root / exec_start.relative_to("/")
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (root / "etc/systemd/system").mkdir(parents=True)
    shutil.copy(UNIT, root / "etc/systemd/system/kodiai.service")
    done = subprocess.run(
        [analyze, "verify", f"--root={root}", "--man=no", "/etc/systemd/system/kodiai.service"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_unit_essentials() -> None:
    svc = service()
    workdir = Path(one(svc, "WorkingDirectory"))
    assert workdir.is_absolute()  # ./data/... resolves under it, not wherever the process starts
    assert Path(one(svc, "EnvironmentFile")).is_absolute()
    assert one(svc, "ExecStart").split()[1:] == ["serve"]
    assert one(svc, "Restart") == "on-failure"
    writable = [Path(p) for v in svc["ReadWritePaths"] for p in v.split()]
    assert workdir in writable
    env = dict(pair.split("=", 1) for v in svc["Environment"] for pair in v.split())
    workspaces = Path(env["WORKSPACE_ROOT"])
    assert any(workspaces.is_relative_to(p) for p in writable)
    # Stopping: SIGTERM to the server alone (its jobs' CLI children keep running while it drains), and
    # time for uvicorn's grace plus the drain (each SHUTDOWN_GRACE_SECONDS) before SIGKILL.
    grace = Settings.model_fields["shutdown_grace_seconds"].default
    assert one(svc, "KillSignal") == "SIGTERM" and one(svc, "KillMode") == "mixed"
    assert int(one(svc, "TimeoutStopSec")) >= 2 * grace + 15
    assert not [key for key in BREAKS_BWRAP if key in svc]


def hide_home(path: str) -> list[str]:
    """ProtectHome=yes hides ``path``; when the test's own interpreter lives there (pyenv under /root),
    it is replayed as ProtectHome=read-only instead, as an operator with such a Python must set it."""
    if Path(os.path.realpath(sys.executable)).is_relative_to(path):
        return [f"mount --bind {path} {path}", f"mount -o remount,bind,ro {path}"]
    return [f"mount -t tmpfs -o mode=0 tmpfs {path}"]


#: How each mount- or privilege-changing directive of the unit is replayed; the rest are seccomp filters
#: on calls bubblewrap does not make (set-uid bits, realtime scheduling, personality, foreign ABIs) or
#: have no effect on it.
MOUNTS = {
    ("ProtectSystem", "strict"): ["mount -o remount,bind,ro /"],
    ("PrivateTmp", "yes"): ["mount -t tmpfs tmpfs /tmp", "mount -t tmpfs tmpfs /var/tmp"],
    ("ProtectHome", "yes"): [line for p in ("/home", "/root") if os.path.isdir(p) for line in hide_home(p)],
    ("ProtectControlGroups", "yes"): [
        "mount --bind /sys/fs/cgroup /sys/fs/cgroup",
        "mount -o remount,bind,ro /sys/fs/cgroup",
    ],
    ("ProtectKernelModules", "yes"): [
        f"mount -t tmpfs -o mode=0 tmpfs {p}" for p in ("/usr/lib/modules",) if os.path.isdir(p)
    ],
}
NOT_REPLAYED = {
    "RestrictSUIDSGID",
    "RestrictRealtime",
    "LockPersonality",
    "SystemCallArchitectures",
    "UMask",
    "AmbientCapabilities",
    "ProtectHostname",  # a UTS namespace: bwrap makes its own
}
SETPRIV = {("NoNewPrivileges", "yes"): "--no-new-privs", ("CapabilityBoundingSet", ""): "--bounding-set=-all"}
HARDENING = {key for key, _ in MOUNTS} | {key for key, _ in SETPRIV} | NOT_REPLAYED | {"ReadWritePaths"}


#: The check docs/deployment.md gives operators (cheaper than the server's probe for the negative case).
BWRAP_CHECK = (
    "bwrap --unshare-all --share-net --unshare-user --uid 65534 --gid 65534 --ro-bind /usr /usr "
    "--symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev "
    "--tmpfs /tmp -- /usr/bin/true && echo 'sandbox ready'"
)


def replay(extra: list[str], *, command: str | None = None) -> subprocess.CompletedProcess[str]:
    """The server's start-up sandbox probe (or a shell ``command``) in a mount namespace hardened as
    the unit says."""
    svc = service()
    for key in svc:
        if key.startswith(("Protect", "Private", "Restrict", "Lock", "SystemCall", "Capability", "NoNew")):
            assert key in HARDENING, f"{key} is not replayed here: add how it changes mounts or privileges"
    script = ["set -e", "mount --make-rprivate /"]
    flags = []
    for key, values in svc.items():
        for value in values:
            script += MOUNTS.get((key, value), [])
            if (key, value) in SETPRIV:
                flags.append(SETPRIV[(key, value)])
    # ReadWritePaths under the read-only root: a writable tmpfs stands in for the state directory.
    state = next(p for p in ("/mnt", "/srv", "/media", "/opt") if os.path.isdir(p))
    script += [f"mount -t tmpfs -o mode=1777 tmpfs {state}", *extra]
    probe = (
        "import sys; from pathlib import Path; from kodiai.execution.sandbox import AgentSandbox; "
        "from kodiai.execution.sandbox_run import startup_check; "
        "print(startup_check(AgentSandbox(run_root=Path(sys.argv[1]))) or 'sandbox ready')"
    )
    user = ["--reuid=65534", "--regid=65534", "--clear-groups"]
    run = ["sh", "-c", repr(command)] if command else [sys.executable, "-c", repr(probe), state]
    script.append(" ".join(["exec setpriv", *flags, *user, "--", *run]))
    return subprocess.run(
        ["unshare", "--mount", "--uts", "--", "sh", "-c", "\n".join(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"},
    )


def test_unit_hardening_leaves_the_agent_sandbox_working() -> None:
    if os.geteuid() != 0 or not (
        shutil.which("unshare") and shutil.which("setpriv") and shutil.which("bwrap")
    ):
        pytest.skip("replaying the unit needs root, unshare, setpriv and bwrap")
    if subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0:
        pytest.skip("no mount namespaces here")
    done = replay([])
    assert done.stdout.strip() == "sandbox ready", done.stderr
    # The reason for the directives left out: a covered /proc path (ProtectKernelTunables) stops bwrap.
    cover = ["mount --bind /proc/sys /proc/sys", "mount -o remount,bind,ro /proc/sys"]
    assert replay([], command=BWRAP_CHECK).stdout.strip() == "sandbox ready"
    covered = replay(cover, command=BWRAP_CHECK)
    assert "Can't mount proc" in covered.stderr and "sandbox ready" not in covered.stdout


@pytest.mark.parametrize("compose", [COMPOSE, SCALE_OUT], ids=lambda p: p.name)
def test_compose_file_validates_against_the_compose_specification(compose: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(compose)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_essentials() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    svc = compose["services"]["kodiai"]
    assert "kodiai-data:/app/data" in svc["volumes"] and "kodiai-data" in compose["volumes"]
    assert svc["env_file"] and svc["restart"] == "unless-stopped"
    assert "/health" in " ".join(svc["healthcheck"]["test"])
    grace = Settings.model_fields["shutdown_grace_seconds"].default
    assert svc["stop_signal"] == "SIGTERM" and int(svc["stop_grace_period"].rstrip("s")) >= 2 * grace + 15
    assert (ROOT / svc["build"]["context"].replace("..", ".") / "Dockerfile").is_file()


def test_scale_out_compose_essentials() -> None:
    """PostgreSQL and an S3 store, two web replicas and N workers, every Kodiai service on both (by the
    variables Kodiai reads) and each process's role on its command line."""
    compose = yaml.safe_load(SCALE_OUT.read_text())
    services = compose["services"]
    assert {"postgres", "minio", "bucket", "web", "worker", "proxy"} <= set(services)
    settings = {name.upper() for name in Settings.model_fields}
    grace = Settings.model_fields["shutdown_grace_seconds"].default
    for name, role, replicas in (("web", "web", 2), ("worker", "worker", 2)):
        svc = services[name]
        command = svc["command"]
        assert command[:2] == ["kodiai", "serve"] and command[command.index("--role") + 1] == role
        assert svc["deploy"]["replicas"] == replicas
        env = svc["environment"]
        assert env["DATABASE_URL"].startswith("postgresql://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["LEARNING_MEMORY_URI"].startswith("s3://")
        assert {"DATABASE_URL", "LEARNING_MEMORY_URI"} <= settings
        assert {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} <= set(env)
        assert env["AWS_ALLOW_HTTP"] == "true" and env["AWS_ENDPOINT_URL"] == "http://minio:9000"
        assert svc["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert "/health" in " ".join(svc["healthcheck"]["test"])
        assert svc["stop_signal"] == "SIGTERM" and int(svc["stop_grace_period"].rstrip("s")) >= 2 * grace + 15
    # Only workers run the agent, so only they get the sandbox's options; web replicas are reached through
    # the proxy, the one published port.
    assert (
        "seccomp=unconfined" in services["worker"]["security_opt"] and "security_opt" not in services["web"]
    )
    assert "ports" not in services["web"] and services["proxy"]["ports"] == ["3000:3000"]
    assert "web:3000" in services["proxy"]["command"]
    # The bucket is created with versioning on (what the backup advice relies on).
    assert "mc version enable" in services["bucket"]["command"][0]
