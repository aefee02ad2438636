"""What the ``archmax`` CLI reads from its arguments.

Workflows, the store, the model (and ``--record``), ``--variables`` and ``--file``.

Rule source: BEHAVIOUR.md §11 (flags, workflow resolution, usage errors) and DESIGN.md §5 (the
model is configuration). Everything here raises :class:`UsageError` for a bad command line; the
CLI turns it into ``error: <message>`` and exit 2. ``UsageError`` never leaves :func:`archmax.cli.main`.

Host tools are loaded by :mod:`archmax.workflow_tools`, the one convention every host shares.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Any

from archmax.cli.errors import UsageError
from archmax.errors import InvalidFilePathError
from archmax.models.base import Model
from archmax.session.files import check_attachment_name
from archmax.session.firing import FileIn
from archmax.session.variables import is_variable_name
from archmax.stores.base import SessionStore

WORKFLOW_FILE = "workflow.yaml"


# --------------------------------------------------------------------------- workflows


def workflows_in(root: Path) -> dict[str, Path]:
    """``slug → folder`` of every ``<root>/workflows/*/workflow.yaml``, sorted by slug."""
    base = root / "workflows"
    if not base.is_dir():
        return {}
    return {p.parent.name: p.parent for p in sorted(base.glob(f"*/{WORKFLOW_FILE}"))}


_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""What a workflow argument must look like to be read as a slug under ``<root>/workflows/``."""


def find_workflow(root: Path, name: str) -> Path | None:
    """The folder a workflow argument names: a slug under ``<root>/workflows/``, or a path, else None."""
    if _SLUG.fullmatch(name) and (root / "workflows" / name / WORKFLOW_FILE).is_file():
        return root / "workflows" / name
    given = Path(name)
    if given.is_dir() and (given / WORKFLOW_FILE).is_file():
        return given
    if given.is_file() and given.suffix in (".yaml", ".yml"):
        return given.parent
    return None


def resolve_workflow(root: Path, name: str | None, *, how: str = "name one") -> Path:
    """The workflow folder for a command (§11: may be left out only when exactly one exists).

    Args:
        root: The workspace (``--root``).
        name: The workflow argument or ``--workflow``, or None.
        how: What the user should do when the name is left out and there are several (``"name one"``,
            ``"pass --workflow <slug>"``).

    Raises:
        UsageError: the name matches nothing (the message lists what was found and the closest
            slug), or it was left out and the workspace holds zero or several workflows.
    """
    if name is not None:
        found = find_workflow(root, name)
        if found is None:
            raise UsageError(not_found_message(root, name))
        return found
    return only_workflow(root, how=how)


def not_found_message(root: Path, name: str) -> str:
    """``no workflow 'expense-aproval' under workflows/ (found: expense-approval, refunds); did you mean ...?``."""
    known = list(workflows_in(root))
    where = "workflows/" if root == Path(".") else f"{root / 'workflows'}/"
    found = ", ".join(known) if known else f"no workflows/*/{WORKFLOW_FILE} there"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"no workflow '{name}' under {where} (found: {found}){hint}"


def only_workflow(root: Path, named: str | None = None, *, how: str = "name one") -> Path:
    """The workspace's one workflow.

    Args:
        root: The workspace (``--root``).
        named: A word that may have named a workflow (``run``'s first word). With no workflow, or
            several, a slug-like word that matches none is reported as a workflow not found
            (``archmax run expense-aproval ...``), not as "name a workflow"; with one, so is a word
            close to its slug but not equal (a misspelt name, not the prompt's first word: issue 25
            item 3).
        how: What to do when there are several (see :func:`resolve_workflow`).

    Raises:
        UsageError: there are zero or several, or ``named`` looks like a misspelling of the one.
    """
    found = workflows_in(root)
    if len(found) == 1:
        only = next(iter(found))
        if named is not None and named != only and _SLUG.fullmatch(named) and _close(named, only):
            raise UsageError(not_found_message(root, named) + f"; {how}")
        return found[only]
    if named is not None and _SLUG.fullmatch(named):
        then = f"; {how}" if found else "; run from the workspace folder or pass --root"
        raise UsageError(not_found_message(root, named) + then)
    if not found:
        raise UsageError(f"no workflows/*/{WORKFLOW_FILE} under '{root}'; name a workflow or pass --root")
    raise UsageError(f"'{root}' holds several workflows ({', '.join(found)}): {how}")


MISSPELT = 0.8
"""How close (``difflib`` ratio) a first word must be to the only workflow's slug to be read as a misspelling of it."""


def _close(word: str, slug: str) -> bool:
    return difflib.SequenceMatcher(None, word, slug).ratio() >= MISSPELT


# --------------------------------------------------------------------------- store


# The deployed stack's key root for session folders (template.yaml Globals ``SESSIONS_PREFIX``, the
# default of archmax.hosting.wiring too): a bare aws:<table>/<bucket> must read what the functions wrote.
DEFAULT_SESSIONS_PREFIX = "sessions"


def parse_aws_store(spec: str) -> tuple[str, str, str]:
    """``(table, bucket, prefix)`` of an ``aws:<table>/<bucket>[/<prefix>]`` store value.

    With no prefix part the prefix is :data:`DEFAULT_SESSIONS_PREFIX` (``sessions``), the stack's
    ``SESSIONS_PREFIX``, so every command (``invoke`` included) reads and writes the S3 keys the
    deployed functions use; ``aws:<table>/<bucket>/`` (an empty prefix) is the bucket root.
    Rule source: user-test finding 1 (one ``--store`` value, one S3 location).

    Raises:
        UsageError: the table or the bucket is missing.
    """
    table, _, rest = spec.removeprefix("aws:").partition("/")
    bucket, slash, prefix = rest.partition("/")
    if not table or not bucket:
        raise UsageError(f"--store '{spec}' must look like aws:<table>/<bucket>[/<prefix>]")
    return table, bucket, prefix if slash else DEFAULT_SESSIONS_PREFIX


def open_store(spec: str | None, root: Path) -> SessionStore:
    """The store ``--store`` names: a folder (default ``<root>/sessions``) or ``aws:<table>/<bucket>[/<prefix>]``.

    A bare ``aws:<table>/<bucket>`` uses the prefix ``sessions`` (see :func:`parse_aws_store`).

    Raises:
        UsageError: a malformed ``aws:`` value.
        ArchmaxError: the AWS extra is not installed (a ``StoreError``).
    """
    if spec is None:
        from archmax.stores.filesystem import FilesystemStore

        return FilesystemStore(root / "sessions")
    if spec.startswith("aws:"):
        table, bucket, prefix = parse_aws_store(spec)
        try:
            from archmax.stores.aws import AwsStore
        except ImportError as exc:
            from archmax.errors import StoreError

            raise StoreError(f"--store aws: needs the AWS extra (pip install 'archmax[aws]'): {exc}") from exc
        return AwsStore(table, bucket, prefix)
    if not spec.strip():
        raise UsageError("--store must name a folder or aws:<table>/<bucket>[/<prefix>]")
    from archmax.stores.filesystem import FilesystemStore

    return FilesystemStore(Path(spec))


# --------------------------------------------------------------------------- model and tools


def model_spec(flag: str | None) -> str | None:
    """``--model`` if given, else ``ARCHMAX_MODEL``, else None."""
    value = flag if flag is not None else os.environ.get("ARCHMAX_MODEL")
    return value if value and value.strip() else None


def build_model(spec: str | None, *, record: str | None = None) -> Model:
    """The model a configuration names (DESIGN.md §5), optionally recorded.

    ``scripted:<file>`` is read per session (:class:`~archmax.models.transcript_script.TranscriptScriptedModel`),
    so a script spans CLI processes.

    Args:
        spec: ``--model`` / ``ARCHMAX_MODEL`` (see :func:`model_spec`).
        record: ``--record <file>``: wrap the model in a
            :class:`~archmax.models.cassette.RecordingModel` appending to that cassette, so a session
            that spans several commands (run, then deliver) records into one file; None records nothing.

    Raises:
        UsageError: ``--record`` is empty.
        ModelConfigurationError: nothing configured, or a bad value (the message says how to configure
            one); a ``--record`` path that is a folder, unwritable, or an existing non-cassette file.
        ModelScriptError: an invalid script file.
    """
    if record is not None and not record.strip():
        raise UsageError("--record must name a cassette file")
    model = _configured_model(spec)
    if record is None:
        return model
    from archmax.models.cassette import RecordingModel

    return RecordingModel(model, Path(record))


def _configured_model(spec: str | None) -> Model:
    from archmax.models import model_from_config

    return model_from_config(spec, replay_per_session=True)


# --------------------------------------------------------------------------- --variables, --file


def parse_variables(value: str | None) -> dict[str, Any] | None:
    """``--variables <json>`` or ``--variables @<file>``: a JSON object (§11).

    Raises:
        UsageError: unreadable or non-UTF-8 file, bad JSON (too deep included), or JSON that is not an object.
    """
    if value is None:
        return None
    text = value
    if value.startswith("@"):
        try:
            text = Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--variables {value}: cannot read the file: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise UsageError(f"--variables {value}: the file is not UTF-8 text: {exc}") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--variables is not valid JSON: {exc}") from exc
    except (RecursionError, ValueError) as exc:  # nesting too deep, or an integer with too many digits
        raise UsageError(f"--variables is not usable JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise UsageError(f"--variables must be a JSON object, not {type(doc).__name__}")
    return doc


def parse_files(values: list[str] | None) -> dict[str, FileIn] | None:
    """``--file <name>=<path>`` (repeatable): variable name → the file, placed under its basename (§11).

    Raises:
        UsageError: no ``=``, a name that is not a variable name, a name given twice, an unreadable path,
            or a basename that cannot be an attachment name (§9.5).
    """
    if not values:
        return None
    files: dict[str, FileIn] = {}
    for item in values:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise UsageError(f"--file '{item}' must look like <name>=<path>")
        if not is_variable_name(name):
            raise UsageError(f"--file '{item}': '{name}' is not a variable name (^[a-z][a-z0-9_]*$)")
        if name in files:
            raise UsageError(f"--file '{item}': '{name}' is given twice")
        try:
            content = Path(path).read_bytes()
        except OSError as exc:
            raise UsageError(f"--file '{item}': cannot read '{path}': {exc.strerror or exc}") from exc
        try:
            check_attachment_name(Path(path).name)
        except InvalidFilePathError as exc:
            raise UsageError(f"--file '{item}': {exc.reason}") from exc
        files[name] = FileIn(name=Path(path).name, content=content)
    return files
