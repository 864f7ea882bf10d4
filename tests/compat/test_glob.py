"""picomatch (``dot: true``) semantics of kodiai.compat.glob, on every glob case the specs name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kodiai.compat.glob import (
    GlobError,
    any_glob_match,
    compile_glob,
    glob_match,
    normalize_skip_paths,
    normalize_write_paths,
)
from kodiai.review.diff_analysis import DEFAULT_FILE_CATEGORIES, PATH_RISK_SIGNALS

# (pattern, path, expected, where the spec states it)
SPEC_CASES = [
    # behaviour R0.5
    ("**/auth*", "auth.ts", True, "behaviour R0.5 leading **/ matches zero directories"),
    ("**/auth*", "src/auth.ts", True, "behaviour R0.5"),
    ("**/auth*", "src/auth/utils.ts", False, "behaviour R0.5 * never crosses /"),
    ("package.json", "package.json", True, "behaviour R0.5 root-only"),
    ("package.json", "apps/web/package.json", False, "behaviour R0.5 no basename matching"),
    ("**/api?key*", "src/api_key.ts", True, "behaviour R0.5 ? is one char"),
    ("**/api?key*", "src/api/key.ts", False, "behaviour R0.5 ? never matches /"),
    # behaviour E3.14.7: write.denyPaths defaults and normalisation
    (".env", ".env", True, "platform deny .env root"),
    (".env", "config/.env", False, "platform deny .env anchored"),
    (".env.*", ".env.local", True, "platform deny .env.*"),
    ("**/*.pem", "key.pem", True, "platform **/*.pem matches root files"),
    ("**/*.pem", "a/b/key.pem", True, "platform **/*.pem nested"),
    (".github/**", ".github/workflows/ci.yml", True, "platform trailing / becomes /**"),
    (".github/**", ".github", True, "picomatch a/** matches a"),
    (".git/**", ".gitignore", False, "platform .git/ does not match .gitignore"),
    ("**/*credentials*", "src/aws/credentials.json", True, "platform deny credentials"),
    ("**/*secret*", "secret.txt", True, "platform deny secret at root"),
    ("*.md", "README.md", True, "behaviour E3.14.7 *.md only root-level"),
    ("*.md", "docs/guide.md", False, "behaviour E3.14.7 *.md only root-level"),
    ("README.md", "docs/README.md", False, "behaviour E3.14.7 README.md only root"),
    # behaviour R1 step 26 skipPaths normalisation: dir/ → dir/**, *.ext → **/*.ext
    ("docs/**", "docs/a/b.md", True, "review step 26 dir/**"),
    ("**/*.lock", "a/yarn.lock", True, "review step 26 *.ext → **/*.ext"),
    # behaviour R2.3 default categories
    ("**/*.test.*", "src/app.test.ts", True, "DA-03"),
    ("**/__tests__/**", "__tests__/a.ts", True, "default test category at root"),
    ("**/test/**", "pkg/test/a.go", True, "default test category"),
    ("**/Dockerfile*", "Dockerfile", True, "DA-06"),
    ("**/.github/**", ".github/workflows/x.yml", True, "dot directories match with dot:true"),
    ("**/*.guide", "docs/architecture.guide", True, "DA-07"),
    ("**/deploy*", "scripts/deploy.sh", True, "infra deploy*"),
    # braces, classes, extglobs, negation (vectors use all of them)
    ("**/*.{js,ts}", "src/a.ts", True, "braces"),
    ("**/*.{js,ts}", "src/a.tsx", False, "braces are anchored"),
    ("src/[a-c]*.ts", "src/apple.ts", True, "class"),
    ("src/[a-c]*.ts", "src/dog.ts", False, "class"),
    ("[sS]rc/**", "Src/x.ts", True, "class at start"),
    ("!**/*.md", "a.md", False, "negation"),
    ("!**/*.md", "src/a.ts", True, "negation"),
    ("*(x)*", "database table name", True, "extglob *(x)"),
    ("*{null,undefined}*", "value is null here", True, "brace inside stars"),
    ("lib/?ib.js", "lib/lib.js", True, "? in segment"),
    ("src/*/index.ts", "src/index.ts", False, "* needs one segment"),
    ("tests/**/*.py", "tests/a.py", True, "/**/ matches zero directories"),
    ("src/api/**", "src/api/v1/users.ts", True, "KC-12 path glob"),
    ("*unused*", "unused import detected", True, "KC-06"),
    ("*legacy shim*", "legacy shim cleanup candidate", True, "RV-33"),
    ("*async*", "use async/await", False, "* never crosses / in text globs"),
]


@pytest.mark.parametrize(
    ("pattern", "path", "expected", "where"), SPEC_CASES, ids=[f"{c[0]}|{c[1]}" for c in SPEC_CASES]
)
def test_spec_glob_cases(pattern: str, path: str, expected: bool, where: str) -> None:
    assert glob_match(pattern, path) is expected, where


def test_star_never_crosses_slash_but_globstar_does() -> None:
    assert glob_match("src/*", "src/a.ts")
    assert not glob_match("src/*", "src/a/b.ts")
    assert glob_match("src/**", "src/a/b.ts")
    assert glob_match("a**", "abc") and not glob_match("a**", "a/b"), "a** is a single star"


def test_empty_input_never_matches_even_negated() -> None:
    assert not glob_match("*", "")
    assert not glob_match("!*style*", "")


def test_input_equal_to_pattern_text_matches_literally() -> None:
    assert glob_match("[abc]", "[abc]")
    assert glob_match("[abc]", "a")


def test_empty_pattern_raises() -> None:
    with pytest.raises(GlobError):
        glob_match("", "a")
    with pytest.raises(ValueError):
        compile_glob("")


def test_trailing_star_accepts_one_trailing_slash() -> None:
    assert glob_match("docs/*", "docs/a/")
    assert not glob_match("docs/*.md", "docs/a.md/x")


def test_trap_js_dot_and_dollar_in_negation() -> None:
    """picomatch negation is ``^(?!…).*$`` with JS ``.``: a text with a newline never matches it."""
    assert not glob_match("!*style*", "TODO\n")
    assert glob_match("!*style*", "TODO")
    # JS ``$`` is the end of input: no match before a trailing newline (Python's ``$`` would).
    assert not glob_match("*.ts", "a.ts\n")
    assert glob_match("*unused*", "unused\n"), "[^/] does match a newline"


def test_double_negation_cancels() -> None:
    assert glob_match("!!*.md", "a.md")
    assert not glob_match("!!*.md", "a.ts")


def test_dot_files_and_dot_segments() -> None:
    assert glob_match("*", ".env")
    assert glob_match("**", ".github/x")
    assert not glob_match("**", "../x"), "picomatch never matches . or .. segments"


def test_leading_dot_slash_is_stripped() -> None:
    assert glob_match("./src/*.ts", "src/a.ts")


def test_regex_specials_are_literal() -> None:
    assert glob_match("a+b.txt", "a+b.txt")
    assert not glob_match("a+b.txt", "aab.txt")
    assert glob_match("$x^", "$x^")
    assert glob_match("v(1)", "v1"), "plain parens group like picomatch"


def test_extglobs() -> None:
    assert glob_match("+(a|b).ts", "abba.ts")
    assert glob_match("@(a|b).ts", "a.ts") and not glob_match("@(a|b).ts", "ab.ts")
    assert glob_match("?(a).ts", ".ts") or glob_match("?(a).ts", "a.ts")
    assert glob_match("!(*.d).ts", "x.ts")


def test_any_glob_match_and_cache() -> None:
    assert any_glob_match(["*.md", "src/**"], "src/a.ts")
    assert not any_glob_match([], "src/a.ts")
    assert compile_glob("**/*.ts") is compile_glob("**/*.ts")
    assert isinstance(compile_glob("**/*.ts"), re.Pattern)


# --- the combined pattern-set matcher must agree with one-by-one matching ----------------------------


CORPUS = sorted(
    {p for group in DEFAULT_FILE_CATEGORIES.values() for p in group}
    | {p for group, _ in PATH_RISK_SIGNALS for p in group}
    | {c[0] for c in SPEC_CASES}
    | {
        "!*style*",
        "*(x)*",
        "src/**/x.ts",
        "a/**",
        "**",
        "*",
        "?",
        "[!a]*",
        "{a,b}/**",
        "!(*.d).ts",
        "**/.*",
        "*.*",
    }
)
SEGMENT = st.sampled_from(
    ["src", "a", "b.ts", "auth.py", ".github", ".", "..", "x.test.ts", "deploy", "é", "a b", "tsconfig.json"]
)
PATHS = st.lists(SEGMENT, min_size=1, max_size=5).map("/".join) | st.text(alphabet="ab./*_\n", max_size=12)


@settings(max_examples=400, deadline=None)
@given(path=PATHS, patterns=st.lists(st.sampled_from(CORPUS), min_size=1, max_size=6))
def test_glob_set_agrees_with_single_matches(path: str, patterns: list[str]) -> None:
    """The fast combined matcher (dot lookaheads dropped on paths without ./.. segments) is exact."""
    assert any_glob_match(patterns, path) is any(glob_match(p, path) for p in patterns)


def test_glob_set_handles_dot_segments_exactly() -> None:
    assert not any_glob_match(["**"], "a/../b")
    assert any_glob_match(["**"], "a/.b/c")
    assert not any_glob_match(["src/*"], "src/..")


def test_skip_paths_normalisation_step_26() -> None:
    """behaviour R1 step 26: trim; ``dir/`` → ``dir/**``; ``*.ext`` → ``**/*.ext``; empties dropped."""
    assert normalize_skip_paths([" dist/ ", "*.lock", "", "  ", "docs/**", "\ufeff*.snap"]) == [
        "dist/**",
        "**/*.lock",
        "docs/**",
        "**/*.snap",
    ]
    patterns = normalize_skip_paths(["dist/", "*.lock"])
    assert any_glob_match(patterns, "dist/a/b.js") and any_glob_match(patterns, "dist")
    assert any_glob_match(patterns, "yarn.lock") and any_glob_match(patterns, "pkg/Cargo.lock")
    assert not any_glob_match(patterns, "src/dist.ts")


def test_write_paths_normalisation_and_default_deny_list() -> None:
    """behaviour E3.14.7, write policy: ``.github/`` → ``.github/**``; ``.env`` anchored; no ``*.ext`` rewrite."""
    deny = normalize_write_paths(
        [
            ".github/",
            ".git/",
            ".planning/",
            ".kodiai.yml",
            ".env",
            ".env.*",
            "**/*.pem",
            "**/*.key",
            "**/*.p12",
            "**/*.pfx",
            "**/*credentials*",
            "**/*secret*",
        ]
    )
    assert deny[:3] == [".github/**", ".git/**", ".planning/**"]
    for path in [
        ".github/workflows/ci.yml",
        ".env",
        ".env.production",
        "key.pem",
        "a/b/c.p12",
        "cfg/credentials.json",
    ]:
        assert any_glob_match(deny, path), path
    for path in ["src/.env", "docs/README.md", ".gitignore", "src/app.ts"]:
        assert not any_glob_match(deny, path), path
    assert normalize_write_paths(["*.md"]) == ["*.md"]
    assert glob_match("*.md", "README.md") and not glob_match("*.md", "docs/a.md")


def test_agrees_with_real_picomatch_on_4800_random_cases() -> None:
    """``picomatch_cases.json``: random globs × paths answered by picomatch 4.0.3 (``dot: true``) under Node.

    Regenerate with ``tests/compat/make_picomatch_cases.py``. Covers classes (POSIX ones too), braces and
    brace ranges, ``***``, extglobs, negation,
    escapes, unbalanced brackets and parens, ``./`` prefixes, dot segments, newlines and ``\\r``.
    """
    data = json.loads((Path(__file__).parent / "picomatch_cases.json").read_text(encoding="utf-8"))
    assert data["picomatch"] == "4.0.3" and len(data["cases"]) == 4800
    wrong = [
        (pattern, path, expected)
        for pattern, path, expected in data["cases"]
        if glob_match(pattern, path) is not expected or any_glob_match([pattern], path) is not expected
    ]
    assert wrong == []
