"""Load `.kodiai.yml` exactly as the original does (spec/platform.md §5.1).

1. No file: defaults, no warnings. 2. YAML syntax error: `RepoConfigError` (the only whole-file failure).
3. Pass 1: the whole document against the full schema. 4. Pass 2, only when pass 1 fails: each top-level
section on its own, in the original's order; a failing section is replaced wholesale by its defaults and
reported as a `ConfigWarning(section, issues)`. A non-object document gives the `root` warning and all
defaults; a top-level array counts as an object (JavaScript `typeof`), so it gives defaults and no warning.

Port addition (issue 15): the file comes from the pull request, so a symbolic link, FIFO, device or a file
over `MAX_CONFIG_BYTES` is refused before it is read — another whole-file `RepoConfigError`, like 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from kodiai.config.issues import issue_strings
from kodiai.config.js_scalars import YamlTimestamp
from kodiai.config.models import SECTIONS, RepoConfig
from kodiai.config.yaml_loader import MAX_DOCUMENT_CHARS, YamlSyntaxError, load_yaml
from kodiai.workspace_files import WorkspaceFileError, read_regular_file, read_workspace_file

CONFIG_FILENAME = ".kodiai.yml"
#: Bytes read at most: any document within the parser's character limit fits (UTF-8: <= 4 bytes a
#: character); a larger file is refused by ``fstat`` before a byte of it is read.
MAX_CONFIG_BYTES = 4 * MAX_DOCUMENT_CHARS
ROOT_ISSUE = "Config is not an object, using all defaults"


class RepoConfigError(ValueError):
    """The `.kodiai.yml` file cannot be used at all (YAML syntax error). Its message names `.kodiai.yml`,
    which is how error classification recognises a configuration problem."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class ConfigWarning(BaseModel):
    """A section that failed validation and was replaced by its defaults."""

    model_config = ConfigDict(frozen=True)

    section: str
    issues: list[str]


class RepoConfigResult(BaseModel):
    """The resolved config and the warnings of the sections that fell back to defaults."""

    model_config = ConfigDict(frozen=True)

    config: RepoConfig
    warnings: list[ConfigWarning]

    @property
    def advisories(self) -> list[str]:
        """Valid settings worth a warning (not section fallbacks; the original had none of these)."""
        return self.config.knowledge.retrieval.advisories()


class _WarningLogger(Protocol):
    def warning(self, event: str, /, **fields: Any) -> Any: ...


#: The log message the runbooks grep for (spec/platform.md §1.3).
WARNING_LOG_MESSAGE = "Config section invalid, using defaults"
#: The log message of a valid but questionable setting.
ADVISORY_LOG_MESSAGE = "Config advisory"


def log_config_warnings(result: RepoConfigResult, logger: _WarningLogger) -> None:
    """Log each warning at warn level, as the original's callers do ("Config section invalid, ..."), then
    each advisory ("Config advisory")."""
    for warning in result.warnings:
        logger.warning(WARNING_LOG_MESSAGE, section=warning.section, issues=list(warning.issues))
    for advice in result.advisories:
        logger.warning(ADVISORY_LOG_MESSAGE, advice=advice)


def _is_js_object(document: Any) -> bool:
    """`typeof doc === "object" && doc !== null` for the values js-yaml produces."""
    return isinstance(document, (dict, list, YamlTimestamp, bytes))


def _section_value(document: Any, section: str) -> tuple[bool, Any]:
    if isinstance(document, dict) and section in document:
        return True, document[section]
    return False, None


def validate_document(document: Any) -> RepoConfigResult:
    """Validate an already parsed YAML document (passes 1 and 2)."""
    if isinstance(document, dict):
        try:
            return RepoConfigResult(config=RepoConfig.model_validate(document), warnings=[])
        except ValidationError:
            pass
    warnings: list[ConfigWarning] = []
    if not _is_js_object(document):
        warnings.append(ConfigWarning(section="root", issues=[ROOT_ISSUE]))
    values: dict[str, Any] = {}
    for section in SECTIONS:
        present, value = _section_value(document, section)
        if not present:
            continue
        try:
            parsed = RepoConfig.model_validate({section: value})
        except ValidationError as exc:
            warnings.append(ConfigWarning(section=section, issues=issue_strings(exc)))
            continue
        name = _field_name(section)
        values[name] = getattr(parsed, name)
    return RepoConfigResult(config=RepoConfig.model_validate(values), warnings=warnings)


def _field_name(alias: str) -> str:
    for name, info in RepoConfig.model_fields.items():
        if info.alias == alias:
            return name
    raise KeyError(alias)  # pragma: no cover - SECTIONS and the model agree


def parse_repo_config(text: str | bytes) -> RepoConfigResult:
    """Parse the text of a `.kodiai.yml` file. Raises `RepoConfigError` on a YAML syntax error."""
    if isinstance(text, bytes):
        if len(text) > MAX_CONFIG_BYTES:
            raise RepoConfigError(f"Invalid .kodiai.yml: the file is larger than {MAX_CONFIG_BYTES} bytes")
        text = text.decode("utf-8", errors="replace")
    try:
        document = load_yaml(text)
    except YamlSyntaxError as exc:
        raise RepoConfigError(
            f"Invalid .kodiai.yml: YAML parse error: {exc}", line=exc.line, column=exc.column
        ) from exc
    return validate_document(document)


def load_repo_config(workspace_dir: str | Path) -> RepoConfigResult:
    """Read exactly `<workspace_dir>/.kodiai.yml` (no `.yaml` variant); absent means all defaults.

    The file comes from the pull request, so it is read with :func:`read_workspace_file`: a symbolic
    link, FIFO, device or a file over `MAX_CONFIG_BYTES` is a whole-file failure (`RepoConfigError`, the
    job's `config_error` comment) decided before anything is read. Blocking: async callers use a thread.
    """
    try:
        raw = read_workspace_file(workspace_dir, CONFIG_FILENAME, max_bytes=MAX_CONFIG_BYTES)
    except WorkspaceFileError as exc:
        raise RepoConfigError(f"Invalid .kodiai.yml: the file {exc.reason}") from None
    except OSError as exc:
        raise RepoConfigError(f"Invalid .kodiai.yml: cannot read it: {exc.strerror or exc}") from None
    if raw is None:
        return RepoConfigResult(config=RepoConfig(), warnings=[])
    return parse_repo_config(raw)


def load_repo_config_file(path: str | Path) -> RepoConfigResult:
    """Parse a config file an operator named (`kodiai config validate FILE`): symbolic links followed,
    but a FIFO, device or oversized file is refused (`RepoConfigError`) at once instead of hanging or
    filling memory. Other I/O errors propagate as `OSError` (the CLI tells "cannot read" apart)."""
    try:
        raw = read_regular_file(path, max_bytes=MAX_CONFIG_BYTES)
    except WorkspaceFileError as exc:
        raise RepoConfigError(f"Invalid .kodiai.yml: {exc.path} {exc.reason}") from None
    return parse_repo_config(raw)
