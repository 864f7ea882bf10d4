"""Defaults the evaluation commands show in their ``--help``: kept apart from the modules that use them so
the help never imports numpy or the memory store."""

DEFAULT_CACHE_DIR = ".eval-cache"
BOOTSTRAP_REPS = 1000
