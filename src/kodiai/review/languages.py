"""Transitional: the file-language table moved to :mod:`kodiai.text.languages` (enforcement and learning
need it below the review package). Only :mod:`kodiai.learning` still imports it from here, until its imports
move too; nothing new should."""

from kodiai.text.languages import UNKNOWN_LANGUAGE, classify_file_language

__all__ = ["UNKNOWN_LANGUAGE", "classify_file_language"]
