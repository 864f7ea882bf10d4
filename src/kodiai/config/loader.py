"""Load `.kodiai.yml` exactly as the original does (behaviour P5.1).

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
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_snake

from kodiai.compat.js_yaml import MAX_DOCUMENT_CHARS, YamlSyntaxError, load_yaml
from kodiai.compat.yaml_scalars import YamlTimestamp
from kodiai.config.guarded import GUARDS, Guard, Misspelling, guards_hit, misspellings
from kodiai.config.guarded import advisories as guard_advisories
from kodiai.config.issues import issue_strings
from kodiai.config.models import SECTIONS, RepoConfig
from kodiai.github.workspace_files import WorkspaceFileError, read_regular_file, read_workspace_file
from kodiai.log import Logger

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
    """A section that failed validation and was replaced by its defaults, or that holds a guarded setting
    which failed closed (``failed_closed`` then names each one and its safe value)."""

    model_config = ConfigDict(frozen=True)

    section: str
    issues: list[str]
    failed_closed: list[str] = Field(default_factory=list)

    @property
    def is_fail_closed(self) -> bool:
        return bool(self.failed_closed)


class RepoConfigResult(BaseModel):
    """The resolved config and the warnings of the sections that fell back to defaults."""

    model_config = ConfigDict(frozen=True)

    config: RepoConfig
    warnings: list[ConfigWarning]
    document_advisories: list[str] = Field(default_factory=list)

    @property
    def advisories(self) -> list[str]:
        """Valid settings worth a warning (not section fallbacks; the original had none of these)."""
        return [*self.document_advisories, *self.config.knowledge.retrieval.advisories()]

    @property
    def failed_closed(self) -> list[str]:
        """Every guarded setting that could not be read and took its safe value."""
        return [line for warning in self.warnings for line in warning.failed_closed]


#: The log message the runbooks grep for (behaviour P1.3).
WARNING_LOG_MESSAGE = "Config section invalid, using defaults"
#: The log message of a section whose guarded settings took their safe values (a port addition).
FAIL_CLOSED_LOG_MESSAGE = "Config section invalid, guarded settings failed closed"
#: The log message of a valid but questionable setting.
ADVISORY_LOG_MESSAGE = "Config advisory"


def log_section_warnings(result: RepoConfigResult, logger: Logger) -> None:
    """Log each warning at warn level: "Config section invalid, using defaults", or for a section whose
    guarded settings failed closed "Config section invalid, guarded settings failed closed" with
    ``failedClosed`` (each setting and what its safe value means)."""
    for warning in result.warnings:
        if warning.failed_closed:
            logger.warning(
                FAIL_CLOSED_LOG_MESSAGE,
                section=warning.section,
                issues=list(warning.issues),
                failedClosed=list(warning.failed_closed),
            )
        else:
            logger.warning(WARNING_LOG_MESSAGE, section=warning.section, issues=list(warning.issues))


def log_config_warnings(result: RepoConfigResult, logger: Logger) -> None:
    """Log each warning (:func:`log_section_warnings`), then each advisory ("Config advisory")."""
    log_section_warnings(result, logger)
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
    """Validate an already parsed YAML document (passes 1 and 2), then fail guarded settings closed.

    A valid document without misspelled guarded keys is the original's result unchanged."""
    typos = misspellings(document)
    notes = guard_advisories(document)
    if isinstance(document, dict) and not typos:
        try:
            config = RepoConfig.model_validate(document)
            return RepoConfigResult(config=config, warnings=[], document_advisories=notes)
        except ValidationError:
            pass
    warnings: list[ConfigWarning] = []
    if not _is_js_object(document):
        warnings.append(ConfigWarning(section="root", issues=[ROOT_ISSUE]))
    values: dict[str, Any] = {}
    for section in SECTIONS:
        present, value = _section_value(document, section)
        section_typos = [t for t in typos if t.section == section]
        if not present and not section_typos:
            continue
        name = _field_name(section)
        resolved, warning = _resolve_section(section, name, present, value, section_typos)
        if resolved is not _FALLBACK:
            values[name] = resolved
        if warning is not None:
            warnings.append(warning)
    return RepoConfigResult(
        config=RepoConfig.model_validate(values), warnings=warnings, document_advisories=notes
    )


#: The section takes its defaults: left out of the validated values, as the original does.
_FALLBACK = object()


def _resolve_section(
    section: str, name: str, present: bool, value: Any, typos: list[Misspelling]
) -> tuple[Any, ConfigWarning | None]:
    """One section's value and warning: the original's per-section fallback, except that a guarded
    setting which cannot be read takes its safe value (and a restriction keeps its valid written one)."""
    issues: list[str] = []
    locations: list[tuple[Any, ...]] = []
    parsed: Any = getattr(RepoConfig(), name)
    failed = False
    if present:
        try:
            parsed = getattr(RepoConfig.model_validate({section: value}), name)
        except ValidationError as exc:
            failed = True
            issues = issue_strings(exc)
            locations = [tuple(err["loc"]) for err in exc.errors()]
    hit = guards_hit(locations + [t.meant for t in typos])
    if not failed and not hit:
        return parsed, None
    keeps = [g for g in GUARDS if g.section == section and g.keep_written and g not in hit]
    if failed and not hit and not keeps:
        return _FALLBACK, ConfigWarning(section=section, issues=issues)
    if failed:
        for guard in keeps:
            parsed = _keep_written(parsed, guard, value)
    for guard in hit:
        parsed = _set_path(parsed, guard.target[1:], guard.safe)
    issues += [t.issue() for t in typos]
    return parsed, ConfigWarning(section=section, issues=issues, failed_closed=[g.describe() for g in hit])


def _keep_written(parsed: Any, guard: Guard, value: Any) -> Any:
    """``parsed`` with the guard's setting as written, when it is written and valid on its own."""
    node = value
    for part in guard.target[1:]:
        key = next((k for k in (part, to_snake(part)) if isinstance(node, dict) and k in node), None)
        if key is None:
            return parsed
        node = node[key]
    nested: Any = node
    for part in reversed(guard.target[1:]):
        nested = {part: nested}
    try:
        alone = getattr(RepoConfig.model_validate({guard.section: nested}), _field_name(guard.section))
    except ValidationError:
        return parsed
    for part in guard.target[1:]:
        alone = getattr(alone, _attr(type(alone), part))
    return _set_path(parsed, guard.target[1:], alone)


def _attr(model: type[BaseModel], alias: str) -> str:
    for name, info in model.model_fields.items():
        if info.alias == alias or name == alias:
            return name
    raise KeyError(alias)  # pragma: no cover - the guards name real keys


def _set_path(model: Any, path: tuple[str, ...], value: Any) -> Any:
    """A copy of ``model`` with the setting at ``path`` (aliases) replaced; an unset parent is built."""
    if not path:
        return value
    attr = _attr(type(model), path[0])
    child = getattr(model, attr)
    if len(path) > 1 and child is None:  # pragma: no cover - no guard sits under an optional object
        raise ValueError(f"cannot set {'.'.join(path)} under an unset key")
    return model.model_copy(update={attr: _set_path(child, path[1:], value)})


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
