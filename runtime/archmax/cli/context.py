"""One ``archmax`` invocation: its arguments, the workspace, the store, the model and the output streams.

Every command module receives a :class:`Context`; nothing here knows a command.

Rule source: BEHAVIOUR.md §11 (``--root``, ``--store``, ``--model``, ``--json``; which workflow a
session command uses), DESIGN.md §5 (the model is configuration).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from archmax.cli.errors import UsageError
from archmax.cli.render import print_outcome, to_json
from archmax.cli.sent import Sends, sent_lines
from archmax.cli.workspace import build_model, find_workflow, model_spec, only_workflow, open_store, resolve_workflow
from archmax.errors import ArchmaxError, DuplicateDeliveryError
from archmax.workflow_tools import load_workspace_tools


class Context:
    """One invocation: parsed arguments, the workspace, the store and the output streams."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(getattr(args, "root", "."))
        self.store_flag: str | None = getattr(args, "store", None)
        self.model_flag: str | None = getattr(args, "model", None)
        self.record_flag: str | None = getattr(args, "record", None)
        self.json = bool(getattr(args, "json", False))
        self.out = sys.stdout
        self.err = sys.stderr
        self._store: Any = None
        self.last_agent: Any = None  # its workflow names the triggers of a next: hint
        self.target: str | None = None  # the session the command fires into, for the hint after an error
        self.sends = Sends()  # what each operation committed to send, for the sent: lines

    # ------------------------------------------------------------------ collaborators

    @property
    def store(self) -> Any:
        """The store ``--store`` names, opened on first use."""
        if self._store is None:
            self._store = open_store(self.store_flag, self.root)
        return self._store

    def context(self) -> list[str]:
        """Flags a printed follow-up command needs to reach the same workspace, store and model."""
        flags: list[str] = []
        if hasattr(self.args, "root"):
            flags += ["--root", str(self.args.root)]
        if self.store_flag is not None:
            flags += ["--store", self.store_flag]
        if self.model_flag is not None:
            flags += ["--model", self.model_flag]
        if self.record_flag is not None:
            flags += ["--record", self.record_flag]
        return flags

    def agent(self, workflow_dir: Path, clock: Any = None) -> Any:
        """An agent for one workflow with its host tools, the configured model and the store.

        Its door keeps what each operation committed to send (:class:`~archmax.cli.sent.Sends`), for
        the ``sent:`` lines :meth:`outcome` prints. It adopts the sessions of a workflow that is no
        longer in the workspace (``Runtime.adopts``): a renamed folder's sessions still name the old
        slug, and the engine refuses every other workflow's session (attack32), as
        :meth:`refuse_other_workflow` does here first.
        """
        from archmax.agent import Agent, create_agent
        from archmax.engine.door import apply

        model = build_model(model_spec(self.model_flag), record=self.record_flag)
        agent = create_agent(workflow_dir, self.store, model, tools=load_workspace_tools(workflow_dir), clock=clock)
        agent.runtime.adopts = self._gone_from_workspace
        self.last_agent = Agent(agent.runtime, self.sends.door(apply))
        return self.last_agent

    def host(self, agent: Any) -> Any:
        """A :class:`~archmax.hosting.host.Host` over ``agent`` and the inbox ``archmax serve`` or the stack keeps.

        That is ``<root>/.inbox`` beside a filesystem store; for an ``aws:`` store the DynamoDB inbox
        ``INBOX_TABLE`` names (the stack's output ``InboxTableName``), so a direct firing never
        overtakes what waits there (DESIGN.md §3 "Inbox"; issue 22); otherwise one in memory.
        """
        from archmax.hosting.host import Host
        from archmax.hosting.inbox import DynamoInbox, FilesystemInbox, MemoryInbox

        root = self.store.location.root
        if root is not None:
            return Host(agent, FilesystemInbox(root))
        table = os.environ.get("INBOX_TABLE")
        if table:
            return Host(agent, DynamoInbox(table, clock=agent.runtime.clock))
        return Host(agent, MemoryInbox())

    def session_workflow(self, session_id: str, missing: type[ArchmaxError] | None = None) -> Path:
        """``--workflow``, else the workflow the session's checkpoint names, else the only one.

        Args:
            session_id: The session the command acts on.
            missing: The operation's error for a session that does not exist (its message says
                so), raised before a workflow is looked for; ``None`` lets the operation decide.

        Raises:
            UsageError: the named workflow is not in the workspace, or ``--workflow`` is not the one
                the existing session belongs to.
            InvalidSessionIdError: a malformed id.
        """
        flag = getattr(self.args, "workflow", None)
        if flag is not None:
            named = resolve_workflow(self.root, flag)
            self.refuse_other_workflow(session_id, named)
            return named
        from archmax.session.ids import validate_session_id

        validate_session_id(session_id)
        head = self.store.head(session_id)
        if head is None and missing is not None:
            raise missing(session_id, None)  # type: ignore[call-arg]
        if head is not None:
            found = find_workflow(self.root, head.workflow)
            if found is None:
                raise UsageError(
                    f"session '{session_id}' belongs to workflow '{head.workflow}', which is not under "
                    f"'{self.root / 'workflows'}'; pass --root or --workflow"
                )
            return found
        return only_workflow(self.root, how="pass --workflow <slug>")

    def refuse_other_workflow(self, session_id: str, workflow_dir: Path) -> None:
        """Refuse to fire a session that exists under another workflow than ``workflow_dir``'s (its slug is the folder name).

        Without this check ``archmax run <other> --session <id>`` (or ``deliver <id> --workflow
        <other>``) resumed the session's park under the wrong workflow's states and stopped part-way
        with a ``KeyError``, leaving it ``running``. Rule source: BEHAVIOUR.md §3.3 (a refused
        firing writes nothing), §11 (which workflow a session command uses).

        A sub-workflow child's id may be fired through its caller's workflow (or any caller's up its
        chain): a firing addressed to a child's id reaches the pair through its caller (§5.10), as it
        did before this check (attack32). A session whose workflow is no longer in the workspace (its
        folder renamed) is not refused: :meth:`session_workflow` then tells the user to pass
        ``--workflow``, and that is how it continues.

        Raises:
            InvalidSessionIdError: a malformed id.
            UsageError: the stored session names another workflow; the message names it.
        """
        head = self.store.head(session_id)
        if head is None or workflow_dir.name in self._pair_workflows(session_id, head.workflow):
            return
        if self._gone_from_workspace(head.workflow):
            return  # its workflow is gone from the workspace (renamed): --workflow is the way on (attack32)
        raise UsageError(
            f"session '{session_id}' belongs to workflow '{head.workflow}', not '{workflow_dir.name}': "
            f"nothing was changed; name workflow '{head.workflow}' instead"
        )

    def _gone_from_workspace(self, workflow: str) -> bool:
        """Whether workflow ``workflow`` is no longer under ``<root>/workflows`` (renamed or removed)."""
        return find_workflow(self.root, workflow) is None

    def _pair_workflows(self, session_id: str, workflow: str) -> set[str]:
        """``workflow`` (the session's) and the workflows of its callers up the child-id chain (§4.1, §5.10)."""
        from archmax.session.ids import parent_session_id

        found = {workflow}
        caller = parent_session_id(session_id)
        while caller is not None:
            head = self.store.head(caller)
            if head is None:
                break
            found.add(head.workflow)
            caller = parent_session_id(caller)
        return found

    def workflow_spec(self, slug: str, cache: dict[str, Any]) -> Any:
        """The workflow a session names, for the decision context; None when it cannot be loaded."""
        if slug not in cache:
            from archmax.spec import load_workflow

            found = find_workflow(self.root, slug)
            try:
                cache[slug] = load_workflow(found) if found is not None else None
            except ArchmaxError:
                cache[slug] = None
        return cache[slug]

    # ------------------------------------------------------------------ output

    def say(self, text: str) -> None:
        """One line on stdout."""
        print(text, file=self.out)

    def note(self, text: str) -> None:
        """One line on stderr."""
        print(text, file=self.err)

    def sent_before_error(self) -> None:
        """Print the ``sent:`` lines of an operation that raised after committing messages (README; attack32).

        The agent sends what the operation let go of before its error goes on (a sub-workflow child
        finished, then its caller's next model call failed: issue 20); the user reads the ``error:``
        line, and these say what went out all the same. Best effort: a store failing to read them
        prints nothing more.
        """
        if self.json or not self.sends.raised:
            return
        try:
            lines = sent_lines(self.store, self.sends.raised)
        except ArchmaxError:
            return
        for line in lines:
            self.note(line)

    def outcome(self, outcome: Any) -> int:
        """Print an Outcome (§11's table, or JSON) and what its operation sent; the exit code.

        The ``sent:`` lines cover every session the operation committed messages for: the Outcome's
        session first, then the others (a sub-workflow child's, §5.10) in the order it let them go
        (:func:`~archmax.cli.sent.sent_lines`).
        """
        if self.json:
            self.say(to_json(outcome))
            return 0 if outcome.kind in ("completed", "parked") else 1
        spec = self.last_agent.spec if self.last_agent is not None else None
        code = print_outcome(outcome, self.out, self.err, self.context(), spec)
        for line in sent_lines(self.store, self.sends.of(outcome)):
            self.note(line)
        return code

    def not_found(self, session_id: str) -> int:
        """Say that ``session_id`` has no checkpoint in this store (the documented error shape under ``--json``); 1."""
        message = f"session '{session_id}' does not exist in this store (archmax sessions lists them)"
        if self.json:  # named as the resolve function names a 404
            self.say(to_json({"error": "NotFound", "message": message, "session_id": session_id, "exit": 1}))
        self.note(f"error: {message}")
        return 1

    def duplicate(self, exc: DuplicateDeliveryError) -> int:
        """A repeated ``--delivery-id``: the event was applied the first time, so this is success."""
        if self.json:
            self.say(to_json({"duplicate": True, "session_id": exc.session_id, "message": str(exc)}))
        else:
            self.note(f"duplicate: {exc}")
        return 0

    # ------------------------------------------------------------------ session state

    def turn_stopped(self, session_id: str) -> bool:
        """Whether the session is ``running`` with no live lease: a turn stopped part-way (the sweep finishes it).

        Raises:
            StoreError: the head could not be read.
        """
        from archmax.cli.leases import live_lease, now_instant
        from archmax.session.records import SessionStatus

        head = self.store.head(session_id)
        return head is not None and head.status == SessionStatus.RUNNING and live_lease(head, now_instant()) is None
