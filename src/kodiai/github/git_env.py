"""The environment of every ``git`` child: what git needs, never the app's secrets, and nothing that lets a
workspace's own configuration run a program.

Two threats. First, git (and the hooks, credential helpers or ``core.sshCommand`` a configuration may
name) runs with whatever environment it is given, and the server's holds the webhook secret, the App
private key and the model and embedding API keys: git children get an allow-list instead (locale,
``PATH``/``HOME``, the proxy and CA variables an operator may need to reach GitHub, the git variables an
operator sets to tune git). None of these comes from a pull request.

Second, a workspace's ``.git/config`` is untrusted input: whatever wrote to the checkout could set
``core.fsmonitor``, hooks, filter, textconv or external-diff drivers, a credential helper or a proxy, and
the server's next ``git status`` would run them with the installation token in its environment. Every
child therefore gets command-line-scope configuration (``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``, which
outranks every file) that switches those off (:data:`HARDENING_CONFIG`), ``GIT_CONFIG_NOSYSTEM`` and an
explicit protocol allow-list. Driver names are free-form (``filter.<name>.clean``), so the keys a
repository actually sets are listed first and neutralised by name (:func:`neutralizing_config`); diff
drivers cannot be switched off by value, so commands that print diffs get ``--no-ext-diff
--no-textconv`` (:func:`harden_args`). :func:`git_child_env` is the one owner of the ``GIT_CONFIG_*``
counter, so the app's own entries (the installation token's header) merge with the hardening instead of
replacing it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "DEFAULT_PROTOCOLS",
    "DIFF_SAFETY_ARGS",
    "GIT_ENV_PASSTHROUGH",
    "HARDENING_CONFIG",
    "ConfigEntry",
    "UnsafeGitConfigError",
    "check_git_dir",
    "config_overlay",
    "git_child_env",
    "harden_args",
    "list_config_keys",
    "list_config_keys_async",
    "neutralizing_config",
    "parse_config_listing",
    "protocols_for",
    "workspace_git_env",
    "workspace_git_env_async",
]

ConfigEntry = tuple[str, str]

#: Variables copied from the server's environment when set: the operator's, never a pull request's.
GIT_ENV_PASSTHROUGH = frozenset(
    {
        # process basics
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "TMPDIR",
        "TZ",
        "LANG",
        "LANGUAGE",
        "XDG_CONFIG_HOME",  # $XDG_CONFIG_HOME/git/config
        # reaching GitHub through a proxy or a private CA
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "CURL_CA_BUNDLE",
        "GIT_SSL_CAINFO",
        "GIT_SSL_CAPATH",
        "GIT_SSL_CERT",
        "GIT_SSL_KEY",
        "GIT_SSL_NO_VERIFY",
        "GIT_SSL_VERSION",
        "GIT_SSL_CIPHER_LIST",
        "GIT_PROXY_SSL_CAINFO",
        "GIT_HTTP_PROXY_AUTHMETHOD",
        "GIT_HTTP_LOW_SPEED_LIMIT",
        "GIT_HTTP_LOW_SPEED_TIME",
        # git's own configuration knobs an operator may set (GIT_CONFIG_NOSYSTEM and GIT_ALLOW_PROTOCOL
        # are not passed through: the app sets both itself)
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_PROTOCOL_FROM_USER",
        # diagnostics (git redacts the Authorization header in traces by default)
        "GIT_TRACE",
        "GIT_TRACE_CURL",
        "GIT_TRACE_REDACT",
        "GIT_CURL_VERBOSE",
    }
)
_PASSTHROUGH_PREFIXES = ("LC_",)

#: Command-line-scope configuration for every git child. Each entry outranks the repository's own
#: (``.git/config``, its includes, ``config.worktree``) and the operator's global file.
HARDENING_CONFIG: tuple[ConfigEntry, ...] = (
    ("core.fsmonitor", "false"),  # a "monitor" is a program git runs on status/diff/add
    ("core.hooksPath", "/dev/null"),  # no hook of .git/hooks (or anywhere) ever runs
    ("core.sshCommand", "false"),  # ssh is not an allowed protocol anyway
    ("core.pager", "cat"),
    ("core.untrackedCache", "false"),
    ("credential.helper", ""),  # empty resets the helper list: the token comes from the header only
    ("diff.external", ""),  # a `git diff` that forgets --no-ext-diff fails instead of running one
    ("protocol.allow", "never"),  # GIT_ALLOW_PROTOCOL (set below) is the authoritative list
    ("submodule.recurse", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("push.recurseSubmodules", "no"),
    ("commit.gpgSign", "false"),  # gpg.program would be a program from the repository's config
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("http.saveCookies", "false"),
    ("gc.auto", "0"),  # no detached gc outliving the command (or the workspace)
    ("maintenance.auto", "false"),
)

#: Plain variables of every git child.
_HARDENING_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",  # set and empty: core.askPass and SSH_ASKPASS are not consulted
    "SSH_ASKPASS": "",
    "GIT_PAGER": "cat",
}

#: What the app's own clone, fetch and push use (the fake GitHub serves smart HTTP on loopback).
DEFAULT_PROTOCOLS: tuple[str, ...] = ("https", "http")

#: Added to every command that can print a diff: no external diff program, no textconv driver.
DIFF_SAFETY_ARGS: tuple[str, ...] = ("--no-ext-diff", "--no-textconv")
_DIFF_COMMANDS = frozenset({"diff", "log", "show", "whatchanged"})

# A repository's driver keys, neutralised by name (``section.<name>.key``: value that disables it).
_NAMED_OVERRIDES: dict[tuple[str, str], str] = {
    ("filter", "clean"): "",  # an empty command disables the filter
    ("filter", "smudge"): "",
    ("filter", "process"): "",
    ("filter", "required"): "false",
    ("credential", "helper"): "",
    ("remote", "proxy"): "",
}
# ``http.<url>.<key>`` or ``http.<key>``: what would send the token through someone else's hands.
_HTTP_OVERRIDES: dict[str, str] = {
    "proxy": "",
    "sslverify": "true",
    "cookiefile": "",
    "savecookies": "false",
    "curloptresolve": "",
}
_REPOSITORY_SCOPES = frozenset({"local", "worktree"})


class UnsafeGitConfigError(RuntimeError):
    """The workspace's git metadata asks for something the server will not do (the message names it)."""


def protocols_for(base_url: str) -> tuple[str, ...]:
    """The protocols a workspace cloned from ``base_url`` needs: HTTP(S), plus ``file`` when the
    "GitHub" is a local directory (tests, or an operator's mirror)."""
    if base_url.startswith(("file://", "/")):
        return (*DEFAULT_PROTOCOLS, "file")
    return DEFAULT_PROTOCOLS


def git_child_env(
    extra: Mapping[str, str] | None = None,
    *,
    config: Iterable[ConfigEntry] = (),
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The allow-listed part of ``environ`` (default: ``os.environ``), the hardening, then the caller's
    own settings: ``config`` entries and ``extra`` variables (e.g.
    :func:`kodiai.github.workspace.auth_env`). This is the one place that numbers ``GIT_CONFIG_*``: the
    entries ``extra`` carries in that form are appended after :data:`HARDENING_CONFIG` and ``config``,
    never written over them (later entries win, so callers may add but never lose the hardening)."""
    source = os.environ if environ is None else environ
    env = {
        name: value
        for name, value in source.items()
        if name in GIT_ENV_PASSTHROUGH or name.startswith(_PASSTHROUGH_PREFIXES)
    }
    extra_env = dict(extra or {})
    entries = [*HARDENING_CONFIG, *config, *_pop_config_entries(extra_env)]
    env.update(extra_env)
    env.update(_HARDENING_ENV)
    env["GIT_ALLOW_PROTOCOL"] = ":".join(protocols)
    env["GIT_CONFIG_COUNT"] = str(len(entries))
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def config_overlay(entries: Iterable[ConfigEntry]) -> dict[str, str]:
    """``entries`` in ``GIT_CONFIG_*`` form, for an ``extra`` mapping that :func:`git_child_env` merges
    (it renumbers them after the hardening)."""
    listed = list(entries)
    overlay = {"GIT_CONFIG_COUNT": str(len(listed))}
    for index, (key, value) in enumerate(listed):
        overlay[f"GIT_CONFIG_KEY_{index}"] = key
        overlay[f"GIT_CONFIG_VALUE_{index}"] = value
    return overlay


def _pop_config_entries(extra: dict[str, str]) -> list[ConfigEntry]:
    """Remove the ``GIT_CONFIG_*`` variables from ``extra`` and return the entries they describe."""
    count_text = extra.pop("GIT_CONFIG_COUNT", "0")
    count = int(count_text) if count_text.isdigit() else 0
    entries = [
        (extra.get(f"GIT_CONFIG_KEY_{i}", ""), extra.get(f"GIT_CONFIG_VALUE_{i}", "")) for i in range(count)
    ]
    for name in [n for n in extra if n.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
        del extra[name]
    return [(key, value) for key, value in entries if key]


def harden_args(args: Sequence[str]) -> list[str]:
    """``args`` with :data:`DIFF_SAFETY_ARGS` right after the sub-command when it can print a diff."""
    if args and args[0] in _DIFF_COMMANDS:
        return [args[0], *DIFF_SAFETY_ARGS, *args[1:]]
    return list(args)


def parse_config_listing(raw: bytes) -> list[tuple[str, str]]:
    """``(scope, name)`` pairs of ``git config --list --show-scope --name-only -z`` output."""
    fields = raw.decode("utf-8", "replace").split("\0")
    return [(fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]


def neutralizing_config(listed: Iterable[tuple[str, str]]) -> list[ConfigEntry]:
    """Overrides for the repository's own driver, helper and proxy keys, by their exact names.

    Only repository scopes count (the operator's global file is trusted). ``core.worktree`` cannot be
    neutralised (it points every path outside the checkout) and raises :class:`UnsafeGitConfigError`.
    """
    overrides: dict[str, str] = {}
    for scope, name in listed:
        if scope not in _REPOSITORY_SCOPES:
            continue
        section, _, rest = name.partition(".")
        section = section.lower()
        subsection, _, key = rest.rpartition(".")
        key = key.lower()
        if section == "core" and not subsection and key == "worktree":
            raise UnsafeGitConfigError("the repository's git configuration sets core.worktree")
        if subsection and (section, key) in _NAMED_OVERRIDES:
            overrides[name] = _NAMED_OVERRIDES[(section, key)]
        elif section == "http" and key in _HTTP_OVERRIDES:
            overrides[name] = _HTTP_OVERRIDES[key]
    return list(overrides.items())


_LIST_ARGS = ("config", "--list", "--show-scope", "--name-only", "-z")


def _listing_failed(code: int | None, err: bytes) -> UnsafeGitConfigError:
    detail = err.decode("utf-8", "replace").strip()[-500:]
    return UnsafeGitConfigError(f"cannot read the repository's git configuration (exit {code}): {detail}")


def list_config_keys(cwd: Path | str, git_binary: str = "git", timeout: float = 30) -> list[tuple[str, str]]:
    """The ``(scope, name)`` of every configuration key git sees in ``cwd`` (reading runs nothing)."""
    done = subprocess.run(
        [git_binary, *_LIST_ARGS],
        cwd=cwd,
        env=git_child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise _listing_failed(done.returncode, done.stderr)
    return parse_config_listing(done.stdout)


async def list_config_keys_async(cwd: Path | str, git_binary: str = "git") -> list[tuple[str, str]]:
    """:func:`list_config_keys` without blocking the event loop."""
    proc = await asyncio.create_subprocess_exec(
        git_binary,
        *_LIST_ARGS,
        cwd=str(cwd),
        env=git_child_env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise _listing_failed(proc.returncode, err)
    return parse_config_listing(out)


def workspace_git_env(
    cwd: Path | str,
    config: Iterable[ConfigEntry] = (),
    *,
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    git_binary: str = "git",
) -> dict[str, str]:
    """:func:`git_child_env` for a command in ``cwd``, with the repository's own driver keys neutralised
    (one ``git config --list`` first, a few milliseconds)."""
    neutral = neutralizing_config(list_config_keys(cwd, git_binary))
    return git_child_env(config=[*neutral, *config], protocols=protocols)


async def workspace_git_env_async(
    cwd: Path | str,
    config: Iterable[ConfigEntry] = (),
    *,
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    git_binary: str = "git",
) -> dict[str, str]:
    """:func:`workspace_git_env` without blocking the event loop."""
    neutral = neutralizing_config(await list_config_keys_async(cwd, git_binary))
    return git_child_env(config=[*neutral, *config], protocols=protocols)


def check_git_dir(top: Path) -> Path:
    """``top/.git`` when it is a real directory of a main repository; raise otherwise.

    A ``.git`` *file* or symlink (or a ``commondir`` inside) would send git to a repository elsewhere on
    the machine — another workspace, say — so the tools that read a workspace refuse it."""
    git_dir = top / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        raise UnsafeGitConfigError(f"{top} is not the top of a git checkout (no .git directory)")
    if (git_dir / "commondir").exists():
        raise UnsafeGitConfigError("the workspace's .git points to another repository (commondir)")
    return git_dir
