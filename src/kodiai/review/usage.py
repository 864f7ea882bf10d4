"""The usage-analysis helpers under the names the parity vectors call; they live in
:mod:`kodiai.handler_kit.usage` (the handler kit injects the usage scan into every handler)."""

from kodiai.handler_kit.usage import UsageEvidence, build_search_terms, parse_git_grep_output

__all__ = ["UsageEvidence", "build_search_terms", "parse_git_grep_output"]
