"""P1.4 GitHub App auth with the real PyGithub client against the fake GitHub server over HTTP."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from kodiai.github.app_auth import GitHubApp, GitHubAppError, _parsed_key
from kodiai.github.retry import GitHubRetry
from support.fake_github import FakeGitHub, generate_private_key_pem


def fast_retry(**kw: object) -> GitHubRetry:
    return GitHubRetry(total=3, backoff_factor=0.01, max_wait=5, **kw)  # type: ignore[arg-type]


def test_1_2_04_initialize_fetches_and_caches_the_slug(fake_github: FakeGitHub) -> None:
    """P1.2 step 4: one JWT call to GET /app; slug cached; log line "GitHub App authenticated as <slug>"."""
    app = GitHubApp(
        fake_github.app_id, fake_github.private_key_pem, base_url=fake_github.url, retry=fast_retry()
    )
    assert app.slug == ""
    assert app.initialize() == "kodiai"
    assert app.slug == "kodiai"
    [call] = fake_github.calls_to("GET", "/app")
    assert call.headers["authorization"].startswith("Bearer ")


def test_1_2_04_slug_falls_back_to_the_app_id() -> None:
    """P1.2 step 4: no slug → the numeric id as a string."""
    with FakeGitHub(app_id=777, app_slug="") as fake:
        app = GitHubApp(777, fake.private_key_pem, base_url=fake.url, retry=fast_retry())
        assert app.initialize() == "777"


def test_1_2_04_bad_key_fails_fast_with_one_clear_message(fake_github: FakeGitHub) -> None:
    """A wrong private key → GitHubAppError naming the settings to check; no key material in it."""
    other_key = generate_private_key_pem()
    app = GitHubApp(fake_github.app_id, other_key, base_url=fake_github.url, retry=fast_retry())
    with pytest.raises(GitHubAppError) as err:
        app.initialize()
    message = str(err.value)
    assert "HTTP 401" in message and "GITHUB_PRIVATE_KEY" in message
    assert "PRIVATE KEY" not in message.replace("GITHUB_PRIVATE_KEY", "")
    assert "\n" not in message


def test_the_key_is_parsed_once_per_process_and_key_text(fake_github: FakeGitHub) -> None:
    """Every GitHubApp built with the same key text signs with the key parsed once (~95 ms of CPU each);
    another key is parsed on its own, and a key that fails to parse fails again (never cached)."""

    def app(key: str) -> GitHubApp:
        return GitHubApp(fake_github.app_id, key, base_url=fake_github.url, retry=fast_retry())

    app(fake_github.private_key_pem).initialize()
    parsed = _parsed_key.cache_info().misses
    assert app(fake_github.private_key_pem).initialize() == "kodiai"
    assert _parsed_key.cache_info().misses == parsed  # no second parse
    with pytest.raises(GitHubAppError, match="HTTP 401"):  # another key: parsed, then refused by GitHub
        app(generate_private_key_pem()).initialize()
    assert _parsed_key.cache_info().misses == parsed + 1
    for _ in range(2):
        with pytest.raises(GitHubAppError):
            app("not a key").initialize()


def test_the_servers_default_api_url_is_the_clients() -> None:
    """kodiai.server.runtime keeps its own copy (importing app_auth would load PyGithub in setup mode)."""
    from kodiai.github.app_auth import DEFAULT_API_URL
    from kodiai.server.runtime import DEFAULT_API_URL as server_default

    assert server_default == DEFAULT_API_URL == "https://api.github.com"


def test_1_2_04_unreachable_github_fails_fast(fake_github: FakeGitHub) -> None:
    """Nothing listening at GITHUB_API_URL → GitHubAppError quickly (bounded retries)."""
    app = GitHubApp(
        1, fake_github.private_key_pem, base_url="http://127.0.0.1:9", retry=fast_retry(), timeout=2
    )
    started = time.monotonic()
    with pytest.raises(GitHubAppError, match=re.escape("http://127.0.0.1:9")):
        app.initialize()
    assert time.monotonic() - started < 10


def test_1_4_installation_token_cached_until_near_expiry(fake_github: FakeGitHub) -> None:
    """P1.4: one token per installation until 5 min before it expires, then a fresh one."""
    now = [datetime.now(UTC)]
    app = GitHubApp(
        fake_github.app_id,
        fake_github.private_key_pem,
        base_url=fake_github.url,
        retry=fast_retry(),
        wall_clock=lambda: now[0],
    )
    first = app.installation_token(1)
    assert app.installation_token(1) == first
    assert len(fake_github.calls_to("POST", "/app/installations/1/access_tokens")) == 1
    other = app.installation_token(2)
    assert other != first
    now[0] += timedelta(minutes=56)  # token lives 1 h; within the 5 min margin → refresh
    renewed = app.installation_token(1)
    assert renewed != first
    assert len(fake_github.calls_to("POST", "/app/installations/1/access_tokens")) == 2


def test_installation_client_uses_the_cached_token(fake_github: FakeGitHub) -> None:
    """The installation client sends `token <installation token>` and reads the cache per request."""
    app = GitHubApp(
        fake_github.app_id, fake_github.private_key_pem, base_url=fake_github.url, retry=fast_retry()
    )
    gh = app.installation_client(1)
    assert gh.get_repo("acme/widgets").full_name == "acme/widgets"
    assert gh.get_repo("acme/widgets").default_branch == "main"
    token = app.installation_token(1)
    repo_calls = fake_github.calls_to("GET", "/repos/acme/widgets")
    assert [c.headers["authorization"] for c in repo_calls] == [f"token {token}"] * 2
    assert len(fake_github.calls_to("POST", "/app/installations/1/access_tokens")) == 1


def test_unknown_installation_is_a_clear_error(fake_github: FakeGitHub) -> None:
    app = GitHubApp(
        fake_github.app_id, fake_github.private_key_pem, base_url=fake_github.url, retry=fast_retry()
    )
    with pytest.raises(GitHubAppError, match="installation 999: HTTP 404"):
        app.installation_token(999)


def test_1_4_connectivity_check_cached_for_30s(fake_github: FakeGitHub) -> None:
    """P1.4: within 30 s the cached result is returned without a call; any error → False."""
    t = [100.0]
    app = GitHubApp(
        fake_github.app_id,
        fake_github.private_key_pem,
        base_url=fake_github.url,
        retry=fast_retry(),
        clock=lambda: t[0],
    )
    app.initialize()
    fake_github.reset_calls()
    assert app.check_connectivity() is True
    assert fake_github.calls == []
    t[0] += 30
    fake_github.fail(404, path="^/app$")
    assert app.check_connectivity() is False
    t[0] += 29.9
    assert app.check_connectivity() is False
    assert len(fake_github.calls_to("GET", "/app")) == 1
    t[0] += 0.2
    assert app.check_connectivity() is True
