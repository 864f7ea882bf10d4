"""`kodiai.settings`: behaviour P1.1 environment variables, the port's additions, P8.4 db-path."""

from __future__ import annotations

import base64
import os
import tempfile
from pathlib import Path

import pytest

from kodiai.settings import (
    GITHUB_APP_SETTINGS,
    Settings,
    SettingsError,
    atob,
    js_number,
    resolve_private_key,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n"
ENV_NAMES = [name.upper() for name in Settings.model_fields]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A process environment without any Kodiai variable, working in an empty directory."""
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def with_app(env: pytest.MonkeyPatch, key: str = PEM) -> None:
    env.setenv("GITHUB_APP_ID", "12345")
    env.setenv("GITHUB_PRIVATE_KEY", key)
    env.setenv("GITHUB_WEBHOOK_SECRET", "hook-secret-value")


def load(**kwargs: object) -> Settings:
    return Settings.load(env_file=None, **kwargs)  # type: ignore[arg-type]


def test_defaults_in_setup_mode(env: pytest.MonkeyPatch) -> None:
    s = load(require_github_app=False)
    assert s.port == 3000 and s.log_level == "info" and s.bot_allow_list == []
    assert s.telemetry_db_path == "./data/kodiai-telemetry.db"
    assert s.knowledge_db_path is None
    assert s.jobs_db_path == "./data/kodiai-jobs.db"
    assert s.learning_memory_uri == "./data/kodiai-memory.lance"
    assert s.github_api_url == "https://api.github.com"
    assert s.embedding_provider == "auto" and s.resolved_embedding_provider() == "local"
    assert (s.job_timeout_seconds, s.max_lane_length, s.shutdown_grace_seconds) == (3600, 100, 30)
    assert s.workspace_root == tempfile.gettempdir()
    assert s.private_key_pem is None
    assert s.missing_github_app_settings() == list(GITHUB_APP_SETTINGS)


def test_missing_github_app_settings_are_listed_in_one_error(env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError) as info:
        load()
    err = info.value
    assert err.missing == ["GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET"]
    text = str(err)
    assert text.startswith("Invalid configuration:\n")
    assert "  GITHUB_APP_ID is required" in text
    assert "  GITHUB_PRIVATE_KEY environment variable is required" in text
    assert "  GITHUB_WEBHOOK_SECRET is required" in text


def test_empty_app_id_and_secret_count_as_missing(env: pytest.MonkeyPatch) -> None:
    with_app(env)
    env.setenv("GITHUB_APP_ID", "")
    env.setenv("GITHUB_WEBHOOK_SECRET", "")
    with pytest.raises(SettingsError) as info:
        load()
    assert info.value.missing == ["GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET"]
    assert load(require_github_app=False).missing_github_app_settings() == [
        "GITHUB_APP_ID",
        "GITHUB_WEBHOOK_SECRET",
    ]


def test_private_key_inline_pem_is_used_verbatim(env: pytest.MonkeyPatch) -> None:
    with_app(env)
    s = load()
    assert s.missing_github_app_settings() == []
    assert s.private_key_pem is not None and s.private_key_pem.get_secret_value() == PEM


def test_private_key_absolute_and_dot_relative_paths_are_read(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "app.pem").write_text(PEM)
    with_app(env, str(tmp_path / "app.pem"))
    assert load().private_key_pem.get_secret_value() == PEM  # type: ignore[union-attr]
    with_app(env, "./app.pem")
    assert load().private_key_pem.get_secret_value() == PEM  # type: ignore[union-attr]


def test_private_key_unreadable_file_gives_the_original_message(
    env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = str(tmp_path / "absent.pem")
    with_app(env, missing)
    with pytest.raises(SettingsError) as info:
        load()
    assert info.value.problems == [
        f'Failed to read private key from file "{missing}": No such file or directory'
    ]


def test_private_key_base64_with_whitespace_and_no_padding(env: pytest.MonkeyPatch) -> None:
    encoded = base64.b64encode(PEM.encode()).decode().rstrip("=")
    with_app(env, "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)))
    assert load().private_key_pem.get_secret_value() == PEM  # type: ignore[union-attr]


@pytest.mark.parametrize("value", ["not*base64", "abcde", "keys/app.pem", "ab=c"])
def test_private_key_invalid_base64_gives_the_original_message(env: pytest.MonkeyPatch, value: str) -> None:
    with_app(env, value)
    with pytest.raises(SettingsError) as info:
        load()
    assert info.value.problems == [
        "GITHUB_PRIVATE_KEY is not a valid PEM string, file path, or base64-encoded value"
    ]


def test_private_key_base64_variable_is_accepted(env: pytest.MonkeyPatch) -> None:
    """PARITY.md fix: GITHUB_PRIVATE_KEY_BASE64 (named by the original's .env.example) is read too."""
    with_app(env)
    env.delenv("GITHUB_PRIVATE_KEY")
    env.setenv("GITHUB_PRIVATE_KEY_BASE64", base64.b64encode(PEM.encode()).decode())
    s = load()
    assert s.private_key_pem.get_secret_value() == PEM  # type: ignore[union-attr]
    env.setenv("GITHUB_PRIVATE_KEY_BASE64", "%%%")
    with pytest.raises(SettingsError, match="GITHUB_PRIVATE_KEY_BASE64 is not a valid PEM string"):
        load()


def test_github_private_key_wins_over_the_base64_variable(env: pytest.MonkeyPatch) -> None:
    with_app(env)
    env.setenv("GITHUB_PRIVATE_KEY_BASE64", "%%% never decoded")
    assert load().private_key_pem.get_secret_value() == PEM  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("raw", "port"),
    [("8080", 8080), (" 8080 ", 8080), ("", 0), ("0x10", 16), ("1e3", 1000), ("3000.0", 3000)],
)
def test_port_uses_javascript_number(env: pytest.MonkeyPatch, raw: str, port: int) -> None:
    env.setenv("PORT", raw)
    assert load(require_github_app=False).port == port


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("abc", "PORT: Invalid input: expected number, received NaN"),
        ("1.5", "PORT: expected an integer between 0 and 65535, received 1.5"),
        ("70000", "PORT: expected an integer between 0 and 65535, received 70000"),
    ],
)
def test_bad_port_is_a_clear_error(env: pytest.MonkeyPatch, raw: str, message: str) -> None:
    env.setenv("PORT", raw)
    with pytest.raises(SettingsError) as info:
        load(require_github_app=False)
    assert info.value.problems == [message]


def test_log_level_accepts_pino_levels_and_rejects_others(env: pytest.MonkeyPatch) -> None:
    for level in ("trace", "debug", "info", "warn", "error", "fatal", "silent"):
        env.setenv("LOG_LEVEL", level)
        assert load(require_github_app=False).log_level == level
    env.setenv("LOG_LEVEL", "verbose")
    with pytest.raises(SettingsError, match="LOG_LEVEL"):
        load(require_github_app=False)


def test_bot_allow_list_is_trimmed_lowercased_and_empties_dropped(env: pytest.MonkeyPatch) -> None:
    env.setenv("BOT_ALLOW_LIST", " Renovate , ,DependaBot,, renovate[bot] ")
    assert load(require_github_app=False).bot_allow_list == ["renovate", "dependabot", "renovate[bot]"]


def test_voyage_key_trimmed_and_selects_voyage_when_auto(env: pytest.MonkeyPatch) -> None:
    env.setenv("VOYAGE_API_KEY", "  pa-key  ")
    s = load(require_github_app=False)
    assert s.voyage_api_key is not None and s.voyage_api_key.get_secret_value() == "pa-key"
    assert s.resolved_embedding_provider() == "voyage"
    env.setenv("VOYAGE_API_KEY", "   ")
    assert load(require_github_app=False).voyage_api_key is None
    env.setenv("EMBEDDING_PROVIDER", "none")
    assert load(require_github_app=False).resolved_embedding_provider() == "none"
    env.setenv("EMBEDDING_PROVIDER", "openai")
    with pytest.raises(SettingsError, match="EMBEDDING_PROVIDER"):
        load(require_github_app=False)


def test_job_limits_are_validated_and_all_problems_reported_together(env: pytest.MonkeyPatch) -> None:
    env.setenv("JOB_TIMEOUT_SECONDS", "0")
    env.setenv("MAX_LANE_LENGTH", "0")
    env.setenv("SHUTDOWN_GRACE_SECONDS", "5")
    with pytest.raises(SettingsError) as info:
        load(require_github_app=False)
    assert [p.split(":")[0] for p in info.value.problems] == ["JOB_TIMEOUT_SECONDS", "MAX_LANE_LENGTH"]


def test_port_additions_read_from_env(env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_API_URL", "https://ghe.example/api/v3")
    env.setenv("LEARNING_MEMORY_URI", "s3://bucket/memory")
    env.setenv("JOBS_DB_PATH", "/var/lib/kodiai/jobs.db")
    env.setenv("WORKSPACE_ROOT", "/scratch")
    s = load(require_github_app=False)
    assert (s.github_api_url, s.learning_memory_uri, s.jobs_db_path, s.workspace_root) == (
        "https://ghe.example/api/v3",
        "s3://bucket/memory",
        "/var/lib/kodiai/jobs.db",
        "/scratch",
    )


def test_secrets_never_appear_in_repr_or_errors(env: pytest.MonkeyPatch) -> None:
    with_app(env)
    env.setenv("CLAUDE_CODE_OAUTH_TOKEN", "oauth-token-value")
    env.setenv("ANTHROPIC_API_KEY", "sk-ant-value")
    env.setenv("VOYAGE_API_KEY", "voyage-value")
    s = load()
    rendered = repr(s) + str(s) + s.model_dump_json()
    for secret in ("hook-secret-value", "oauth-token-value", "sk-ant-value", "voyage-value", "MIIBOgIBAAJB"):
        assert secret not in rendered
    env.setenv("GITHUB_PRIVATE_KEY", "bad*secret*material")
    with pytest.raises(SettingsError) as info:
        load()
    assert "secret*material" not in str(info.value)


def test_dotenv_file_is_read_and_real_environment_wins(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dotenv = tmp_path / "custom.env"
    dotenv.write_text(
        "GITHUB_APP_ID=77\nGITHUB_WEBHOOK_SECRET=dotenv-webhook-secret\nGITHUB_PRIVATE_KEY=./k.pem\nPORT=4000\n"
    )
    (tmp_path / "k.pem").write_text(PEM)
    s = Settings.load(env_file=dotenv)
    assert (s.github_app_id, s.port) == ("77", 4000)
    env.setenv("PORT", "5000")
    assert Settings.load(env_file=dotenv).port == 5000
    (tmp_path / ".env").write_text("GITHUB_APP_ID=88\n")
    assert Settings.load(require_github_app=False).github_app_id == "88"


def test_env_example_loads_in_setup_mode_with_defaults(env: pytest.MonkeyPatch) -> None:
    s = Settings.load(env_file=REPO_ROOT / ".env.example", require_github_app=False)
    assert s.missing_github_app_settings() == list(GITHUB_APP_SETTINGS)
    assert s.port == 3000 and s.embedding_provider == "auto" and s.voyage_api_key is None
    assert s.knowledge_db().path == os.path.join(os.getcwd(), "data", "kodiai-knowledge.db")
    text = (REPO_ROOT / ".env.example").read_text()
    assert all(f"{name}=" in text for name in ENV_NAMES)


def test_settings_knowledge_db_uses_the_env_value(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("KNOWLEDGE_DB_PATH", "  ./k.db  ")
    s = load(require_github_app=False)
    assert s.knowledge_db().source == "env" and s.knowledge_db().path == str(tmp_path / "k.db")
    assert s.knowledge_db("/tmp/x.db").source == "arg"


@pytest.mark.parametrize(
    ("text", "decoded"),
    [("aGk=", b"hi"), ("aGk", b"hi"), (" a G k\n", b"hi"), ("", b""), ("aGVsbG8=", b"hello")],
)
def test_atob_forgiving_base64(text: str, decoded: bytes) -> None:
    assert atob(text) == decoded


@pytest.mark.parametrize("text", ["a", "aGk==", "a=Gk", "aG-k", "aGk=="])
def test_atob_rejects_what_the_browser_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        atob(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("", 0.0),
        ("  ", 0.0),
        ("12", 12.0),
        ("0b11", 3.0),
        ("0o17", 15.0),
        (".5", 0.5),
        ("-Infinity", float("-inf")),
    ],
)
def test_js_number(text: str, value: float) -> None:
    assert js_number(text) == value


def test_js_number_nan_and_resolve_private_key_relative_to_cwd(tmp_path: Path) -> None:
    assert js_number("12px") != js_number("12px")
    (tmp_path / "k.pem").write_text(PEM)
    assert resolve_private_key("./k.pem", cwd=tmp_path) == PEM


def test_js_number_rejects_non_ascii_digits_and_underscores() -> None:
    assert js_number("\u0663") != js_number("\u0663")  # Arabic-Indic 3 is NaN in JavaScript
    assert js_number("1_000") != js_number("1_000")


def test_directly_constructed_settings_resolve_the_key_on_first_use(env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_PRIVATE_KEY", base64.b64encode(PEM.encode()).decode())
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.private_key_pem is not None and s.private_key_pem.get_secret_value() == PEM
    env.setenv("GITHUB_PRIVATE_KEY", "***")
    with pytest.raises(SettingsError, match="not a valid PEM string"):
        _ = Settings(_env_file=None).private_key_pem  # type: ignore[call-arg]
