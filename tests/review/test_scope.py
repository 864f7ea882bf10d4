"""behaviour R4.22 (scope coordinator, SC-01…SC-06) and the localeCompare trap."""

from __future__ import annotations

from kodiai.review.scope import ScopeGroup, detect_scope_coordination, extract_scoped_packages


def test_sc_01_one_group() -> None:
    assert detect_scope_coordination(["@babel/core", "@babel/parser"]) == [
        ScopeGroup(scope="@babel", packages=["@babel/core", "@babel/parser"])
    ]


def test_sc_02_one_package_per_scope() -> None:
    assert detect_scope_coordination(["@babel/core", "@types/node"]) == []


def test_sc_03_two_groups_sorted() -> None:
    groups = detect_scope_coordination(["@types/node", "@babel/core", "@types/jest", "@babel/parser"])
    assert [g.scope for g in groups] == ["@babel", "@types"]
    assert groups[1].packages == ["@types/jest", "@types/node"]


def test_sc_04_empty() -> None:
    assert detect_scope_coordination([]) == []


def test_sc_05_unscoped_ignored() -> None:
    assert detect_scope_coordination(["react", "react-dom", "@babel/core", "@babel/parser"]) == [
        ScopeGroup(scope="@babel", packages=["@babel/core", "@babel/parser"])
    ]


def test_sc_06_single_scoped_package() -> None:
    assert detect_scope_coordination(["@babel/core"]) == []


def test_trap_locale_compare_is_icu_collation() -> None:
    """Groups follow ICU en-US collation (``@a < @A < @a_x < @a-x < @b < @e < @é < @f``), not code points."""
    names = [f"{s}/{p}" for s in ["@b", "@a_x", "@a-x", "@A", "@a", "@é", "@f", "@e"] for p in ("x", "y")]
    order = [g.scope for g in detect_scope_coordination(names)]
    assert order == ["@a", "@A", "@a_x", "@a-x", "@b", "@e", "@é", "@f"]
    assert order != sorted(order)


def test_packages_use_code_unit_order_and_names_without_slash_are_their_own_scope() -> None:
    groups = detect_scope_coordination(
        ["@types/node", "@types/Node", "@types/jest", "@scope", "@scope", "@/x", "@/y"]
    )
    by_scope = {g.scope: g.packages for g in groups}
    assert by_scope["@types"] == ["@types/Node", "@types/jest", "@types/node"]
    assert by_scope["@scope"] == ["@scope", "@scope"]
    assert by_scope["@"] == ["@/x", "@/y"]


def test_x_35_scoped_package_tokens_from_the_body() -> None:
    """R4.37 X-35: ``@scope/name`` tokens come from the PR body, de-duplicated in first-seen order."""
    body = (
        "Bumps @babel/core and @babel/parser.\nAlso @babel/core again, @types/node, email a@b, @x/y.z-1 é@q/r"
    )
    # The name class includes ".", so a sentence-ending dot is captured, as in JS.
    assert extract_scoped_packages(body) == [
        "@babel/core",
        "@babel/parser.",
        "@types/node",
        "@x/y.z-1",
        "@q/r",
    ]
    assert extract_scoped_packages(None) == []
    assert extract_scoped_packages("@café/x") == [], "ASCII \\w: no token starts at @café"
