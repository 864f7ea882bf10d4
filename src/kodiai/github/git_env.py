"""The environment of every ``git`` child: what git needs, never the app's secrets.

git (and the hooks, credential helpers, ``core.fsmonitor`` or ``core.sshCommand`` a repository or a
system configuration may name) runs with whatever environment it is given. The server's environment
holds the webhook secret, the App private key and the model and embedding API keys, so git children get
an allow-list instead: locale, ``PATH``/``HOME``, the proxy and CA variables an operator may need to
reach GitHub, the git variables an operator sets to tune git, and what the app itself passes (the
installation token's ``GIT_CONFIG_*`` header). Everything else is dropped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["GIT_ENV_PASSTHROUGH", "git_child_env"]

#: Variables copied from the server's environment when set.
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
        # git's own configuration and hardening knobs an operator may set
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_ALLOW_PROTOCOL",
        "GIT_PROTOCOL_FROM_USER",
        # diagnostics (git redacts the Authorization header in traces by default)
        "GIT_TRACE",
        "GIT_TRACE_CURL",
        "GIT_TRACE_REDACT",
        "GIT_CURL_VERBOSE",
    }
)
_PASSTHROUGH_PREFIXES = ("LC_",)


def git_child_env(
    extra: Mapping[str, str] | None = None, *, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allow-listed part of ``environ`` (default: ``os.environ``), then ``extra`` (the app's own
    settings for this git run, e.g. :func:`kodiai.github.workspace.auth_env`) on top."""
    source = os.environ if environ is None else environ
    env = {
        name: value
        for name, value in source.items()
        if name in GIT_ENV_PASSTHROUGH or name.startswith(_PASSTHROUGH_PREFIXES)
    }
    if extra:
        env.update(extra)
    return env
