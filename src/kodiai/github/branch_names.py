"""Branch-name validation for clone and push refs (behaviour P4.2, pure).

Stricter than git on purpose: only ``[A-Za-z0-9_/.-]``, starting alphanumeric, so a ref can never be
read as an option or smuggle shell/revision syntax. Checked in the original's order; each rule has
its own message.
"""

from __future__ import annotations

import re

_FORBIDDEN = set("~^:?*[]\\")
_ALLOWED_TAIL = re.compile(r"[A-Za-z0-9_/.\-]*")


class InvalidBranchNameError(ValueError):
    """The ref fails one of the branch-name rules; the message names the rule."""


def validate_branch_name(name: str) -> str:
    """Return ``name`` unchanged when valid; raise :class:`InvalidBranchNameError` otherwise."""
    shown = repr(name)
    if not name or not name.strip():
        raise InvalidBranchNameError("Branch name must not be empty")
    if name.startswith("-"):
        raise InvalidBranchNameError(f"Branch name must not start with '-': {shown}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidBranchNameError(f"Branch name must not contain control characters: {shown}")
    bad = sorted({c for c in name if c in _FORBIDDEN})
    if bad:
        raise InvalidBranchNameError(f"Branch name contains forbidden characters {''.join(bad)!r}: {shown}")
    if not name[0].isascii() or not name[0].isalnum():
        raise InvalidBranchNameError(f"Branch name must start with a letter or digit: {shown}")
    if not _ALLOWED_TAIL.fullmatch(name[1:]):
        raise InvalidBranchNameError(
            f"Branch name may only contain letters, digits, '_', '/', '.', '-': {shown}"
        )
    if ".." in name:
        raise InvalidBranchNameError(f"Branch name must not contain '..': {shown}")
    if name.endswith(".lock"):
        raise InvalidBranchNameError(f"Branch name must not end with '.lock': {shown}")
    if "@{" in name:
        raise InvalidBranchNameError(f"Branch name must not contain '@{{': {shown}")
    if name.endswith("/"):
        raise InvalidBranchNameError(f"Branch name must not end with '/': {shown}")
    if "//" in name:
        raise InvalidBranchNameError(f"Branch name must not contain '//': {shown}")
    return name
