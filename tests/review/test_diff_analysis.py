"""behaviour R4.7 (diff analysis, DA-01…DA-27) and the JS traps of analyze_diff / numstat parsing."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kodiai.review.diff_analysis import (
    TRUNCATION_SIGNAL,
    DiffAnalysisInput,
    FileLineStats,
    analyze_diff,
    classify_file_language,
    classify_languages,
    count_hunks,
    parse_numstat_per_file,
)

FROZEN: Callable[[], float] = lambda: 0.0  # noqa: E731


def _clock(values: list[float]) -> Callable[[], float]:
    """A clock returning ``values`` in turn, then repeating the last one."""
    it: Iterator[float] = iter(values)
    last = values[-1]

    def now() -> float:
        return next(it, last)

    return now


def _analyze(files: list[str], numstat: list[str] | None = None, diff: str | None = None, **kw: object):
    data = DiffAnalysisInput(changed_files=files, numstat_lines=numstat or [], diff_content=diff, **kw)
    return analyze_diff(data, clock=FROZEN)


def test_da_01_empty_input() -> None:
    result = _analyze([])
    assert result.files_by_category == {"source": [], "test": [], "config": [], "docs": [], "infra": []}
    assert result.files_by_language == {}
    assert result.risk_signals == []
    assert result.metrics.model_dump() == {
        "total_files": 0,
        "total_lines_added": 0,
        "total_lines_removed": 0,
        "hunks_count": 0,
    }
    assert result.is_large_pr is False


def test_da_02_source() -> None:
    assert _analyze(["src/app.ts"]).files_by_category["source"] == ["src/app.ts"]


def test_da_03_test() -> None:
    assert _analyze(["src/app.test.ts"]).files_by_category["test"] == ["src/app.test.ts"]


def test_da_04_config() -> None:
    assert _analyze(["package.json"]).files_by_category["config"] == ["package.json"]


def test_da_05_docs() -> None:
    assert _analyze(["README.md"]).files_by_category["docs"] == ["README.md"]


def test_da_06_infra() -> None:
    assert _analyze(["Dockerfile"]).files_by_category["infra"] == ["Dockerfile"]


def test_da_07_user_categories_are_additive() -> None:
    result = _analyze(["docs/architecture.guide", "src/a.test.ts"], file_categories={"docs": ["**/*.guide"]})
    assert result.files_by_category["docs"] == ["docs/architecture.guide"]
    assert result.files_by_category["test"] == ["src/a.test.ts"]


def test_da_08_auth_signal() -> None:
    assert "Modifies authentication/authorization code" in _analyze(["src/auth-service.ts"]).risk_signals


def test_da_09_manifest_signal() -> None:
    assert "Modifies dependency manifest" in _analyze(["package.json"]).risk_signals


def test_da_10_numstat_totals() -> None:
    result = _analyze(["a.ts", "b.ts", "c.png"], ["10\t5\ta.ts", "7\t3\tb.ts", "-\t-\tc.png"])
    assert result.metrics.total_files == 3
    assert result.metrics.total_lines_added == 17
    assert result.metrics.total_lines_removed == 8


def test_da_11_hunks() -> None:
    diff = "diff --git a/a b/a\n@@ -1 +1 @@\n-x\n+y\n@@ -5 +5 @@\n-z\n+w\n"
    assert _analyze(["a"], diff=diff).metrics.hunks_count == 2


def test_da_12_error_handling_signal() -> None:
    diff = "+try {\n+  run()\n+} catch (err) {\n+}\n"
    assert "Modifies error handling logic" in _analyze(["src/a.ts"], diff=diff).risk_signals


def test_da_13_large_diff_skips_content_signals() -> None:
    diff = "+try { x } catch (e) {}\n" + "x" * (51 * 1024)
    signals = _analyze(["src/a.ts"], diff=diff).risk_signals
    assert "Modifies error handling logic" not in signals
    assert "Touches cryptographic code" not in signals


def test_da_14_large_pr_by_files_and_by_lines() -> None:
    assert _analyze([f"src/f{i}.ts" for i in range(201)]).is_large_pr is True
    assert _analyze(["a.ts", "b.ts"], ["4000\t0\ta.ts", "0\t1200\tb.ts"]).is_large_pr is True
    assert _analyze(["a.ts"], ["2500\t2500\ta.ts"]).is_large_pr is False, "exactly 5000 lines is not large"


def test_da_15_only_200_files_are_categorised() -> None:
    result = _analyze([f"src/f{i}.ts" for i in range(205)])
    assert result.metrics.total_files == 205
    assert sum(len(v) for v in result.files_by_category.values()) == 200
    assert len(result.files_by_language["TypeScript"]) == 200


def test_da_16_frozen_clock_within_budget() -> None:
    data = DiffAnalysisInput(
        changed_files=["src/auth/login.ts", "package.json"],
        numstat_lines=["5\t2\tsrc/auth/login.ts", "3\t1\tpackage.json"],
        diff_content="+try {\n+  verify(token)\n+} catch (e) {}\n",
    )
    result = analyze_diff(data, clock=_clock([10.0]))
    assert result.risk_signals == [
        "Modifies authentication/authorization code",
        "Modifies dependency manifest",
        "Modifies error handling logic",
        "Touches cryptographic code",
    ]
    assert TRUNCATION_SIGNAL not in result.risk_signals
    assert result.files_by_category["source"] == ["src/auth/login.ts"]
    assert result.files_by_category["config"] == ["package.json"]
    assert (
        result.metrics.total_files,
        result.metrics.total_lines_added,
        result.metrics.total_lines_removed,
    ) == (
        2,
        8,
        3,
    )
    assert result.metrics.hunks_count == 0


def test_da_17_budget_exceeded_at_the_first_check() -> None:
    data = DiffAnalysisInput(
        changed_files=["src/auth/login.ts", "package.json"],
        numstat_lines=["5\t2\tsrc/auth/login.ts", "3\t1\tpackage.json"],
        diff_content="@@ -1 +1 @@\n+try {} catch (e) {}\n",
    )
    result = analyze_diff(data, clock=_clock([0.0, 51.0]))
    assert result.risk_signals == [TRUNCATION_SIGNAL]
    assert all(files == [] for files in result.files_by_category.values())
    assert (result.metrics.total_lines_added, result.metrics.total_lines_removed) == (8, 3)
    assert result.metrics.hunks_count == 1
    assert result.is_large_pr is False


def test_da_17b_budget_is_injectable() -> None:
    """The 50 ms default budget can be changed; a budget of 0 trips at once, the truncation signal is last."""
    data = DiffAnalysisInput(changed_files=["a.ts"], numstat_lines=[])
    assert analyze_diff(data, clock=FROZEN, time_budget_ms=0).risk_signals == [TRUNCATION_SIGNAL]
    ticking = _clock([0.0, 1.0, 2.0, 60.0])
    result = analyze_diff(
        DiffAnalysisInput(changed_files=["src/auth.ts", "b.ts"], numstat_lines=[]), clock=ticking
    )
    assert result.files_by_category["source"] == ["src/auth.ts"], "the first file was classified in time"
    assert result.risk_signals[-1] == TRUNCATION_SIGNAL


def test_da_18_language_map() -> None:
    expected = {
        "a.ts": "TypeScript",
        "a.py": "Python",
        "a.go": "Go",
        "a.rs": "Rust",
        "A.java": "Java",
        "a.rb": "Ruby",
        "a.cpp": "C++",
        "a.c": "C",
        "a.h": "C",
        "a.php": "PHP",
    }
    assert {path: classify_file_language(path) for path in expected} == expected


def test_da_19_unknown_extensions() -> None:
    assert classify_file_language("a.xyz") == "Unknown"
    assert classify_file_language("a.unknown") == "Unknown"


def test_da_20_extensionless_files() -> None:
    assert classify_file_language("README") == "Unknown"
    assert classify_file_language("Makefile") == "Unknown"


def test_da_21_classify_languages_groups_and_drops_unknown() -> None:
    assert classify_languages(["a.ts", "b.py", "c.ts", "README.md"]) == {
        "TypeScript": ["a.ts", "c.ts"],
        "Python": ["b.py"],
    }


def test_da_22_analyze_diff_languages_leave_out_markdown() -> None:
    result = _analyze(["a.ts", "b.py", "c.go", "d.rs", "README.md"])
    assert result.files_by_language == {
        "TypeScript": ["a.ts"],
        "Python": ["b.py"],
        "Go": ["c.go"],
        "Rust": ["d.rs"],
    }


def test_da_23_empty_input_has_no_languages() -> None:
    assert _analyze([]).files_by_language == {}


def test_da_24_numstat_per_file() -> None:
    stats = parse_numstat_per_file(["10\t5\tsrc/a.ts", "3\t0\tb.py"])
    assert stats == {
        "src/a.ts": FileLineStats(added=10, removed=5),
        "b.py": FileLineStats(added=3, removed=0),
    }


def test_da_25_binary_counts_zero() -> None:
    assert parse_numstat_per_file(["-\t-\tlogo.png"]) == {"logo.png": FileLineStats(added=0, removed=0)}


def test_da_26_empty_numstat() -> None:
    assert parse_numstat_per_file([]) == {}


def test_da_27_malformed_and_empty_lines_skipped() -> None:
    assert parse_numstat_per_file(["", "garbage", "1\t2", "\t\t", "4\t5\tok.ts"]) == {
        "ok.ts": FileLineStats(added=4, removed=5)
    }


# --- JS traps (parity-vectors/README.md §3) -------------------------------------------------------


def test_trap_hunks_use_js_multiline_caret() -> None:
    """JS ``/^@@/gm`` matches after ``\\r``, U+2028 and U+2029 but not after U+0085."""
    assert count_hunks("@@ a\r@@ b\u2028@@ c\u2029@@ d\x85@@ e") == 4


def test_trap_crypto_regex_is_ascii_case_insensitive() -> None:
    """``sign`` matches inside ``design``; ``ſign``/``HAſH`` match only under Python's Unicode /i, not JS."""
    assert "Touches cryptographic code" in _analyze(["a.ts"], diff="+ design tokens").risk_signals
    signals = _analyze(["a.ts"], diff="+ ſign HAſH").risk_signals
    assert "Touches cryptographic code" not in signals


def test_trap_error_handling_uses_js_whitespace() -> None:
    """JS ``\\s`` includes U+FEFF and excludes U+0085."""
    assert "Modifies error handling logic" in _analyze(["a.ts"], diff="try\ufeff{").risk_signals
    assert "Modifies error handling logic" not in _analyze(["a.ts"], diff="try\x85{").risk_signals


def test_trap_parse_int_in_numstat() -> None:
    """``parseInt`` reads digit prefixes (``12abc`` → 12), rejects fullwidth digits, NaN → 0 per file."""
    stats = parse_numstat_per_file(["12abc\t１２\tx.ts", " 2\t0x1A\ty.ts"])
    assert stats == {"x.ts": FileLineStats(added=12, removed=0), "y.ts": FileLineStats(added=2, removed=0)}


def test_trap_numstat_totals_skip_nan_removed_lines() -> None:
    """A NaN removed field drops the whole line; a NaN added field drops only the added count."""
    result = _analyze(["a"], ["12\t\tx.ts", "１２\t3\ty.ts", "12\t3"])
    assert (result.metrics.total_lines_added, result.metrics.total_lines_removed) == (12, 6)


def test_trap_huge_numstat_sums_are_doubles() -> None:
    result = _analyze(["a"], ["99999999999999999999\t0\ta", "747\t0\tb"])
    assert result.metrics.total_lines_added == 10**20, "JS adds doubles: 1e20 + 747 is 1e20"


def test_trap_extension_is_after_the_last_dot_of_the_whole_path() -> None:
    assert classify_file_language("dir.d/file") == "Unknown"
    assert classify_file_language("go") == "Go"
    assert classify_file_language("file.") == "Unknown"
    assert classify_file_language("pkg/api/index.PY") == "Python"


def test_trap_numstat_later_duplicate_keeps_first_position_like_a_js_map() -> None:
    stats = parse_numstat_per_file(["1\t1\ta\tb.ts", "2\t2\tx.ts", "3\t3\tx.ts"])
    assert stats == {"a\tb.ts": FileLineStats(added=1, removed=1), "x.ts": FileLineStats(added=3, removed=3)}
    assert list(stats) == ["a\tb.ts", "x.ts"]


def test_analyze_diff_accepts_a_plain_dict() -> None:
    result = analyze_diff({"changed_files": ["a.ts"], "numstat_lines": ["1\t1\ta.ts"]}, clock=FROZEN)
    assert result.metrics.total_lines_added == 1


def test_unknown_category_keys_are_ignored_and_source_patterns_never_match() -> None:
    result = _analyze(["a.md", "b.ts"], file_categories={"vendor": ["**"], "source": ["**/*.md"]})
    assert result.files_by_category["docs"] == ["a.md"]
    assert "vendor" not in result.files_by_category
