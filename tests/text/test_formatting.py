"""wrap_in_details: behaviour R4.17 (FM-01…09) = behaviour E5.9 (#139–147), plus its JS traps."""

from __future__ import annotations

from kodiai.text.formatting import wrap_in_details


def test_4_17_fm_01_short_body_is_wrapped() -> None:
    """R4.17 FM-01 / exec #139."""
    out = wrap_in_details("Short answer")
    assert out.startswith("<details>") and "<summary>" in out and out.endswith("</details>")


def test_4_17_fm_02_500_characters_are_wrapped() -> None:
    """R4.17 FM-02 / exec #140."""
    out = wrap_in_details("a" * 500)
    assert out.startswith("<details>") and out.endswith("</details>")


def test_4_17_fm_03_501_characters_are_wrapped() -> None:
    """R4.17 FM-03 / exec #141."""
    out = wrap_in_details("a" * 501)
    assert out.startswith("<details>") and out.endswith("</details>")


def test_4_17_fm_04_exact_default_layout() -> None:
    """R4.17 FM-04 / exec #142."""
    body = "x" * 600
    assert wrap_in_details(body) == (
        f"<details>\n<summary>Kodiai response (600 characters)</summary>\n\n{body}\n\n</details>"
    )


def test_4_17_fm_05_custom_summary() -> None:
    """R4.17 FM-05 / exec #143."""
    out = wrap_in_details("body", "Custom summary")
    assert "<summary>Custom summary</summary>" in out
    assert "characters" not in out


def test_4_17_fm_06_default_summary_counts_750() -> None:
    """R4.17 FM-06 / exec #144."""
    assert "750 characters" in wrap_in_details("y" * 750)


def test_4_17_fm_07_already_wrapped_is_unchanged() -> None:
    """R4.17 FM-07 / exec #145."""
    body = "<details>\n<summary>x</summary>\nbody\n</details>"
    assert wrap_in_details(body) == body


def test_4_17_fm_08_leading_whitespace_then_details_is_unchanged() -> None:
    """R4.17 FM-08 / exec #146."""
    body = "  \n<details>x"
    assert wrap_in_details(body) == body


def test_4_17_fm_09_empty_body() -> None:
    """R4.17 FM-09 / exec #147."""
    assert (
        wrap_in_details("")
        == "<details>\n<summary>Kodiai response (0 characters)</summary>\n\n\n\n</details>"
    )


def test_trap_trim_start_is_js_whitespace() -> None:
    """JS trimStart: U+FEFF counts as whitespace (unchanged); U+001F and U+0085 do not (wrapped)."""
    assert wrap_in_details("\ufeff<details>x") == "\ufeff<details>x"
    assert wrap_in_details("\u2028<details>") == "\u2028<details>"
    assert wrap_in_details("\x1f<details>x").startswith("<details>\n<summary>")
    assert wrap_in_details("\x85<details>").startswith("<details>\n<summary>")


def test_trap_only_exact_lowercase_details_counts() -> None:
    assert wrap_in_details("<DETAILS>x").startswith("<details>\n")
    assert wrap_in_details("<details open>x").startswith("<details>\n")


def test_trap_length_counts_utf16_units() -> None:
    """String.length counts UTF-16 code units: an emoji is 2."""
    assert "(2 characters)" in wrap_in_details("😀")
    assert "(3 characters)" in wrap_in_details("日本語")


def test_trap_empty_summary_is_used_as_given() -> None:
    """`summary_text=""` is kept; only None selects the default."""
    assert wrap_in_details("b", "") == "<details>\n<summary></summary>\n\nb\n\n</details>"
    assert "Kodiai response (1 characters)" in wrap_in_details("b", None)
