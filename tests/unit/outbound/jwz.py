"""Jamie Zawinski's message threading algorithm (https://www.jwz.org/doc/threading.html), for tests.

Kept short and faithful to the steps that decide which messages share a thread: the id table of
containers (step 1), References then In-Reply-To linking parents without making loops (1A-1C), the
root set (step 2) and pruning of empty containers (step 4). Subject grouping (step 5) is left out:
it only joins threads the ids did not, and the tests check that the ids alone suffice.

Ids are read as a mail client reads them: the ``<...>`` tokens of the raw header (an RFC 2047
encoded-word is not decoded, so an encoded id is no id), compared exactly as written.
"""

from __future__ import annotations

import email
import re
from dataclasses import dataclass, field

_ID = re.compile(r"<([^<>\s]+)>")


@dataclass(eq=False)
class Container:
    message: bytes | None = None
    parent: Container | None = None
    children: list[Container] = field(default_factory=list)

    def reaches(self, other: Container) -> bool:
        """Whether ``other`` is this container or one of its descendants."""
        return other is self or any(child.reaches(other) for child in self.children)


def _ids(msg: email.message.Message, name: str) -> list[str]:
    values = msg.get_all(name) or []
    return [i for value in values for i in _ID.findall(re.sub(r"\r?\n", "", str(value)))]


def _link(parent: Container, child: Container) -> None:
    if child.parent is not None:
        child.parent.children.remove(child)
    child.parent = parent
    parent.children.append(child)


def thread(messages: list[bytes]) -> list[Container]:
    """The root set of ``messages`` (raw RFC 5322 bytes), after pruning: one container per thread."""
    table: dict[str, Container] = {}
    for n, raw in enumerate(messages):
        msg = email.message_from_bytes(raw)  # compat32: raw header text, nothing decoded
        own = (_ids(msg, "Message-ID") or [f"no-id-{n}"])[0]
        container = table.setdefault(own, Container())
        if container.message is not None:  # a duplicate id: JWZ keeps both, the second under a new key
            container = table.setdefault(f"{own}#dup{n}", Container())
        container.message = raw
        references = _ids(msg, "References")
        parents = _ids(msg, "In-Reply-To")[:1]  # 1A: References, then the first In-Reply-To id
        if parents and (not references or references[-1] != parents[0]):
            references.append(parents[0])
        previous: Container | None = None
        for ref in references:  # 1B: link each reference to the next, unless it has a parent or loops
            current = table.setdefault(ref, Container())
            if previous is not None and current.parent is None and not current.reaches(previous):
                _link(previous, current)
            previous = current
        # 1C: the last reference is this message's parent, replacing any parent guessed before
        if previous is not None and not container.reaches(previous):
            _link(previous, container)
        elif container.parent is not None and previous is None:
            container.parent.children.remove(container)
            container.parent = None
    roots = [c for c in table.values() if c.parent is None]  # step 2
    return [kept for root in roots for kept in _prune(root, at_root=True)]  # step 4


def _prune(container: Container, *, at_root: bool) -> list[Container]:
    """Step 4: drop empty leaves; replace an empty container by its children (at the root, only one)."""
    children = [kept for child in container.children for kept in _prune(child, at_root=False)]
    container.children = children
    for child in children:
        child.parent = container
    if container.message is None and not children:
        return []
    if container.message is None and (not at_root or len(children) == 1):
        for child in children:
            child.parent = None
        return children
    return [container]


def messages_in(root: Container) -> list[bytes]:
    """Every message of a thread, depth first."""
    own = [root.message] if root.message is not None else []
    return own + [m for child in root.children for m in messages_in(child)]
