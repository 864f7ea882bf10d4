"""Parsing a pull request URL and matching it to ``GITHUB_API_URL`` (pure functions)."""

from __future__ import annotations

import pytest

from kodiai.review.pull_url import (
    PullRef,
    PullUrlError,
    check_api_matches,
    parse_pull_url,
    web_url_for,
)


@pytest.mark.parametrize(
    "url, expected",
    [
        ("https://github.com/acme/widgets/pull/7", PullRef("https://github.com", "acme", "widgets", 7)),
        ("https://www.github.com/acme/widgets/pull/7/", PullRef("https://github.com", "acme", "widgets", 7)),
        ("https://github.com/acme/widgets/pull/7/files", PullRef("https://github.com", "acme", "widgets", 7)),
        (
            "https://github.com/acme/my.repo_x/pull/12/commits?w=1#diff",
            PullRef("https://github.com", "acme", "my.repo_x", 12),
        ),
        (" https://GHE.corp.example/team/api/pull/3 ", PullRef("https://ghe.corp.example", "team", "api", 3)),
        ("http://127.0.0.1:8080/acme/widgets/pull/1", PullRef("http://127.0.0.1:8080", "acme", "widgets", 1)),
    ],
)
def test_parses_pull_urls(url: str, expected: PullRef) -> None:
    assert parse_pull_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "github.com/acme/widgets/pull/7",
        "ftp://github.com/acme/widgets/pull/7",
        "https://github.com/acme/widgets",
        "https://github.com/acme/widgets/issues/7",
        "https://github.com/acme/widgets/pull/0",
        "https://github.com/acme/widgets/pull/abc",
        "https://github.com/-acme/widgets/pull/7",
        "https://github.com/acme/widgets/tree/main/pull/7",
    ],
)
def test_refuses_anything_else(url: str) -> None:
    with pytest.raises(PullUrlError, match="not a pull request URL"):
        parse_pull_url(url)


def test_web_origin_of_an_api_base() -> None:
    assert web_url_for("https://api.github.com") == "https://github.com"
    assert web_url_for("https://ghe.corp.example/api/v3/") == "https://ghe.corp.example"
    assert web_url_for("http://127.0.0.1:8080") == "http://127.0.0.1:8080"


def test_the_api_must_serve_the_url_s_host() -> None:
    check_api_matches(parse_pull_url("https://github.com/a/b/pull/1"), "https://api.github.com")
    check_api_matches(
        parse_pull_url("https://ghe.corp.example/a/b/pull/1"), "https://ghe.corp.example/api/v3"
    )
    with pytest.raises(PullUrlError, match=r"set GITHUB_API_URL=https://ghe\.corp\.example/api/v3"):
        check_api_matches(parse_pull_url("https://ghe.corp.example/a/b/pull/1"), "https://api.github.com")
    with pytest.raises(PullUrlError, match=r"set GITHUB_API_URL=https://api\.github\.com"):
        check_api_matches(parse_pull_url("https://github.com/a/b/pull/1"), "https://ghe.corp.example/api/v3")
