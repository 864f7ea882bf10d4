"""Setup mode: register the GitHub App through GitHub's App Manifest flow and write ``.env``.

When the App settings are missing, ``GET /`` lists what is missing and offers the flow, guarded by a
one-time setup token that the server prints in its log at start-up (so nobody else who can reach the
server in setup mode can register *their* App into its ``.env``):
``POST /setup/start`` renders a form that POSTs a manifest (permissions and events the bot needs) to
``<github>/settings/apps/new`` (or the organisation variant); GitHub redirects back to
``GET /setup/callback?code=…&state=…``, which exchanges the code with
``POST {GITHUB_API_URL}/app-manifests/{code}/conversions`` and writes the credentials to ``.env``.
Secrets are never shown on a page or written to a log.

The setup server listens on 127.0.0.1 unless ``--host`` or ``HOST`` says otherwise
(:func:`listen_host`), and logs the whole setup link, token included, once (:func:`setup_link_message`).
A public URL GitHub cannot deliver webhooks to (loopback, private, link-local, a local name) is allowed
but warned about on the pages and in the log (:func:`public_url_problem`). The done page names the
mention handle, ``@<app slug>`` (:func:`render_done`).

One registration per ``.env``: :func:`write_env` refuses a file that already holds credentials
(:class:`AlreadyRegisteredError`, :func:`registration_refusal` says why, for the pages), writes every
value quoted so that it reads back exactly, and refuses values that could inject another setting
(control characters, ``${``). After a registration the server's setup token must be spent (the caller
clears ``Runtime.setup_token``, and :func:`token_ok` never matches an empty token).
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import ipaddress
import json
import os
import re
import secrets
import tempfile
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from dotenv import dotenv_values
from dotenv.parser import parse_stream

from kodiai.github.workspace import git_base_url_for

PERMISSIONS = {
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "actions": "read",
    "metadata": "read",
    "checks": "read",
}
EVENTS = ["issue_comment", "issues", "pull_request", "pull_request_review", "pull_request_review_comment"]
_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


class SetupError(RuntimeError):
    """The manifest flow could not complete (bad state, bad code, GitHub error)."""


def build_manifest(public_url: str, *, name: str = "Kodiai") -> dict[str, Any]:
    """The App Manifest GitHub pre-fills the registration form with."""
    base = public_url.rstrip("/")
    return {
        "name": name,
        "url": base,
        "hook_attributes": {"url": f"{base}/webhooks/github", "active": True},
        "redirect_url": f"{base}/setup/callback",
        "public": False,
        "default_permissions": PERMISSIONS,
        "default_events": EVENTS,
    }


def registration_url(github_api_url: str, org: str | None, state: str) -> str:
    """``<web>/settings/apps/new`` or ``<web>/organizations/<org>/settings/apps/new`` with the state."""
    web = git_base_url_for(github_api_url)
    if org:
        if not _ORG.fullmatch(org):
            raise SetupError(f"Invalid organization name: {org!r}")
        return f"{web}/organizations/{org}/settings/apps/new?state={state}"
    return f"{web}/settings/apps/new?state={state}"


#: Where setup mode listens when neither ``--host`` nor ``HOST`` is given: the setup pages can register an
#: App into ``.env``, so by default only this machine reaches them (a normal start keeps 0.0.0.0).
SETUP_DEFAULT_HOST = "127.0.0.1"
DEFAULT_HOST = "0.0.0.0"
LOOPBACK_NOTE = (
    "Setup mode: listening on 127.0.0.1 only, so only this machine can open the setup page. From another "
    "machine, forward the port (ssh -L {port}:127.0.0.1:{port} <this server>), or restart with --host 0.0.0.0 "
    "(or HOST=0.0.0.0). Once the App is registered, a restart listens on 0.0.0.0 again."
)


def listen_host(option: str | None, setting: str | None, setup: bool) -> str:
    """The interface to listen on: ``--host``, else the ``HOST`` setting, else 0.0.0.0 (127.0.0.1 in setup
    mode). "Configured" means either was given, even as 0.0.0.0."""
    return option or setting or (SETUP_DEFAULT_HOST if setup else DEFAULT_HOST)


def setup_link(host: str, port: int, token: str) -> str:
    """The setup page's URL with the token, for the host the server listens on (a wildcard address: the
    loopback address of the same family, which works on this machine)."""
    name = host.strip("[]") or DEFAULT_HOST
    if name == "0.0.0.0":
        name = "127.0.0.1"
    elif name == "::":
        name = "::1"
    if ":" in name:
        name = f"[{name}]"
    return f"http://{name}:{port}/?token={token}"


def setup_link_message(host: str, port: int, token: str) -> str:
    """The one log line that carries the setup token: the whole link, clickable in a terminal."""
    where = ""
    if host.strip("[]") in ("0.0.0.0", "::"):
        where = " (from another machine, use this server's address instead of the loopback address)"
    return f"Setup mode: open {setup_link(host, port, token)} to register the GitHub App{where}"


_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


def _address_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address (this machine only)"
    if ip.is_link_local:
        return "a link-local address"
    if ip in _CGNAT:
        return "a carrier-grade NAT address (100.64.0.0/10)"
    if ip.is_private:
        return "a private network address"
    if not ip.is_global:
        return "a reserved address"
    return None


def public_url_problem(url: str) -> str | None:
    """Why GitHub cannot deliver webhooks to ``url`` (loopback, link-local, private or CGNAT address,
    ``localhost`` or a local name), or ``None`` when it looks reachable from the internet.

    Such a URL is still allowed (a tunnel or a proxy may forward it); the pages and the log warn.
    """
    try:
        host = (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return "it is not a valid URL"
    if not host:
        return "it has no host name"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
            return f"{host} is a local name"
        if "." not in host:
            return f"{host} is a name without a domain"
        return None
    kind = _address_kind(ip)
    return f"{host} is {kind}" if kind else None


def _public_url_warning(public_url: str, problem: str) -> str:
    return (
        "<div role='alert' style='border:2px solid #c60;padding:.5rem 1rem;margin:1rem 0'>"
        f"<p><strong>GitHub cannot deliver webhooks to <code>{html.escape(public_url)}</code></strong>: "
        f"{html.escape(problem)}.</p>"
        "<p>The registration itself works (GitHub sends this browser back here), but no review or mention "
        "will arrive until GitHub can reach the server. Use the public address of this server, or of the "
        "HTTPS reverse proxy in front of it (for example <code>https://kodiai.example.com</code>). For a "
        "trial on a machine GitHub cannot reach, use a tunnel that gives it a public address (a webhook "
        "relay such as smee, or a Cloudflare Tunnel run with cloudflared) and enter that address. The "
        "webhook URL can be changed later in the App's settings on GitHub.</p></div>"
    )


HANDLE_NOTE = (
    "<p>The bot answers <code>@&lt;app slug&gt;</code> in comments. GitHub derives the slug from the App "
    "name on its form: an App named <em>Kodiai</em> answers <code>@kodiai</code> (the handle the "
    "documentation uses). App names are unique on GitHub, so yours may differ; the page after the "
    "registration shows the exact handle.</p>"
)


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:3rem auto;padding:0 1rem}"
        "code{background:#f3f3f3;padding:0 .2rem}label{display:block;margin:.6rem 0 .2rem}"
        "input{width:100%;padding:.3rem}button{margin-top:1rem;padding:.5rem 1rem}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


def render_index(missing: list[str], public_url: str, token: str = "") -> str:
    """The setup page; warns when the pre-filled public URL (the address the page was opened at) is one
    GitHub cannot deliver webhooks to."""
    items = "".join(f"<li><code>{html.escape(name)}</code></li>" for name in missing)
    problem = public_url_problem(public_url)
    warning = _public_url_warning(public_url, problem) if problem else ""
    return _page(
        "Kodiai setup",
        "<p>Kodiai is running in <strong>setup mode</strong>: the GitHub App settings are missing.</p>"
        f"<p>Missing settings:</p><ul>{items}</ul>"
        "<p>Register a new GitHub App with the permissions and events Kodiai needs. GitHub sends you back "
        "here and the credentials are written to the <code>.env</code> file; then restart "
        "<code>kodiai serve</code>.</p>"
        "<form method='post' action='/setup/start'>"
        "<label for='token'>Setup token (printed in the server log at start-up)</label>"
        f"<input id='token' name='token' value='{html.escape(token, quote=True)}'>"
        "<label for='public_url'>Public URL of this server (GitHub sends webhooks here)</label>"
        f"<input id='public_url' name='public_url' value='{html.escape(public_url, quote=True)}'>"
        f"{warning}"
        "<label for='org'>Organization (leave empty to register under your user account)</label>"
        "<input id='org' name='org' value=''>"
        "<button type='submit'>Register the GitHub App</button></form>"
        f"{HANDLE_NOTE}"
        "<p>Or set <code>GITHUB_APP_ID</code>, <code>GITHUB_PRIVATE_KEY</code> and "
        "<code>GITHUB_WEBHOOK_SECRET</code> yourself.</p>",
    )


def render_manifest_form(
    action_url: str, manifest: dict[str, Any], public_url_warning: str | None = None
) -> str:
    """A form POSTing the manifest to GitHub, submitted automatically with a button as fallback; with a
    ``public_url_warning`` (see :func:`public_url_problem`) the warning is shown and nothing is submitted
    until the operator confirms."""
    value = html.escape(json.dumps(manifest), quote=True)
    form = (
        f"<form id='manifest' method='post' action='{html.escape(action_url, quote=True)}'>"
        f"<input type='hidden' name='manifest' value='{value}'>"
    )
    if public_url_warning:
        return _page(
            "Register the Kodiai GitHub App",
            _public_url_warning(str(manifest.get("url", "")), public_url_warning)
            + form
            + "<p>To change the URL, go back in your browser. To register with this URL anyway:</p>"
            "<button type='submit'>Continue on GitHub with this URL</button></form>",
        )
    return _page(
        "Register the Kodiai GitHub App",
        form + "<p>Continue on GitHub to create the app.</p>"
        "<button type='submit'>Continue on GitHub</button></form>"
        "<script>document.getElementById('manifest').submit()</script>",
    )


def mention_handle(slug: str) -> str:
    """What people write to ask the bot: ``@<app slug>`` (see :mod:`kodiai.mention.intent`)."""
    return f"@{slug}"


def render_done(slug: str, html_url: str, env_file: Path) -> str:
    if not html_url.startswith(("https://", "http://")):  # only a web link goes into the href
        html_url = f"https://github.com/apps/{slug}"
    handle = html.escape(mention_handle(slug))
    return _page(
        "Kodiai is registered",
        f"<p>GitHub App <strong>{html.escape(slug)}</strong> created. Its credentials were written to "
        f"<code>{html.escape(str(env_file))}</code>.</p>"
        "<p>Next: restart <code>kodiai serve</code>, then "
        f"<a href='{html.escape(html_url, quote=True)}/installations/new'>install the app</a> on your "
        "repositories.</p>"
        f"<p>Mention the bot as <code>{handle}</code> in an issue or pull-request comment (the app's slug "
        "on GitHub). It also answers <code>@claude</code>, unless the repository's <code>.kodiai.yml</code> "
        "sets <code>mention.acceptClaudeAlias: false</code>. Where the documentation writes "
        f"<code>@kodiai</code>, use <code>{handle}</code>.</p>",
    )


def new_state() -> str:
    return secrets.token_urlsafe(24)


def token_ok(given: str, expected: str) -> bool:
    """Constant-time check of the setup token (an empty expected token never matches)."""
    return bool(expected) and secrets.compare_digest(given.encode(), expected.encode())


async def exchange_code(
    github_api_url: str, code: str, *, client: httpx.AsyncClient | None = None
) -> dict[str, Any]:
    """``POST /app-manifests/{code}/conversions`` → the new app's id, slug, pem, webhook secret."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,100}", code):
        raise SetupError("Invalid manifest code")
    url = f"{github_api_url.rstrip('/')}/app-manifests/{code}/conversions"
    owned = client is None
    http = client or httpx.AsyncClient(timeout=15)
    try:
        response = await http.post(url, headers={"Accept": "application/vnd.github+json"})
    except httpx.HTTPError as exc:
        raise SetupError(f"Could not reach GitHub at {github_api_url}: {type(exc).__name__}") from None
    finally:
        if owned:
            await http.aclose()
    if response.status_code != 201:
        raise SetupError(f"GitHub refused the manifest code (HTTP {response.status_code})")
    data: dict[str, Any] = response.json()
    for key in ("id", "pem", "webhook_secret"):
        if not data.get(key):
            raise SetupError(f"GitHub's manifest conversion has no {key!r}")
    return data


#: Settings whose value in ``.env`` means a GitHub App is already registered there.
CREDENTIAL_KEYS = (
    "GITHUB_APP_ID",
    "GITHUB_PRIVATE_KEY",
    "GITHUB_PRIVATE_KEY_BASE64",
    "GITHUB_WEBHOOK_SECRET",
)
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})  # control characters, line and paragraph separators


class AlreadyRegisteredError(SetupError):
    """``.env`` already holds GitHub App credentials: a second registration must not overwrite them."""


def registered_credentials(env_file: Path) -> list[str]:
    """The credential settings with a non-empty value in ``env_file`` (empty when absent)."""
    if not env_file.is_file():
        return []
    values = dotenv_values(env_file)
    return [key for key in CREDENTIAL_KEYS if (values.get(key) or "").strip()]


def registration_refusal(env_file: Path) -> str | None:
    """Why a registration must not start or complete (credentials already there), or ``None``."""
    present = registered_credentials(env_file)
    if not present:
        return None
    return (
        f"{env_file} already holds GitHub App credentials ({', '.join(present)}); a second registration "
        "would overwrite them. Restart `kodiai serve` to use them, or remove them from the file to "
        "register a new App."
    )


def env_value(key: str, value: object) -> str:
    """``value`` as a ``.env`` value that reads back exactly (python-dotenv's single-quote rule: ``\\``
    and ``\'`` escaped). Values that could change other settings are refused: control characters and
    line separators (a newline would start a new setting) and ``${`` (python-dotenv, and so the
    settings loader, expands it even inside quotes)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SetupError(f"GitHub's manifest conversion has a non-text {key} value")
    text = str(value)
    if not text:
        raise SetupError(f"GitHub's manifest conversion has an empty {key} value")
    if any(unicodedata.category(ch) in _FORBIDDEN_CATEGORIES for ch in text) or "${" in text:
        raise SetupError(
            f"GitHub's manifest conversion has a {key} value with control characters or '${{'; refused"
        )
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def conversion_env(conversion: dict[str, Any]) -> dict[str, str]:
    """The settings a manifest conversion gives (unquoted), each checked by :func:`env_value`."""
    app_id = conversion.get("id")
    if isinstance(app_id, bool) or not re.fullmatch(r"[1-9][0-9]{0,19}", str(app_id)):
        raise SetupError("GitHub's manifest conversion has no numeric app id")
    pem = conversion.get("pem")
    if not isinstance(pem, str) or "PRIVATE KEY" not in pem:
        raise SetupError("GitHub's manifest conversion has no PEM private key")
    values: dict[str, object] = {
        "GITHUB_APP_ID": str(app_id),
        # stored base64-encoded on one line (``GITHUB_PRIVATE_KEY`` accepts that form)
        "GITHUB_PRIVATE_KEY": base64.b64encode(pem.encode()).decode(),
        "GITHUB_WEBHOOK_SECRET": conversion.get("webhook_secret"),
    }
    if conversion.get("client_id"):
        values["GITHUB_CLIENT_ID"] = conversion["client_id"]
    if conversion.get("client_secret"):  # the dashboard's GitHub sign-in (docs/dashboard.md)
        values["GITHUB_CLIENT_SECRET"] = conversion["client_secret"]
    for key, value in values.items():
        env_value(key, value)  # raises on anything that cannot be written safely
    return {key: str(value) for key, value in values.items()}


def write_env(env_file: Path, conversion: dict[str, Any]) -> None:
    """Write the app credentials into ``env_file`` (other lines kept; file mode 0600), atomically.

    Refuses (:class:`AlreadyRegisteredError`) when the file already holds credentials, and refuses
    values that could inject another setting (:func:`env_value`). The written file is read back with
    python-dotenv (what the settings loader uses) and must give exactly these values.
    """
    reason = registration_refusal(env_file)
    if reason is not None:
        raise AlreadyRegisteredError(reason)
    values = conversion_env(conversion)
    target = env_file.resolve() if env_file.is_symlink() else env_file
    original = target.read_text(encoding="utf-8") if target.is_file() else None
    kept = [
        binding.original.string
        for binding in parse_stream(io.StringIO(original or ""))
        if binding.key not in values  # empty placeholders of these settings are replaced
    ]
    text = "".join(kept)
    if text and not text.endswith("\n"):
        text += "\n"
    text += "".join(f"{key}={env_value(key, value)}\n" for key, value in values.items())
    _replace_private(target, text)
    read_back = dotenv_values(target)
    if any(read_back.get(key) != value for key, value in values.items()):
        if original is None:
            target.unlink(missing_ok=True)
        else:
            _replace_private(target, original)
        raise SetupError(f"{env_file} did not read back as written; it was left unchanged")


def _replace_private(path: Path, text: str) -> None:
    """Write ``text`` to a 0600 temp file beside ``path``, fsync, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
