"""A store wrapper that forwards exactly the ``SessionStore`` protocol's members, and nothing else.

Rule source: issue 23 "The port" (a store wrapped by a decorator implementing exactly the protocol,
for tracing, metrics or tenancy, must take the same code paths, with the same AWS calls, as the
store it wraps). The member list is read from the Protocol class itself, so a member added to
the protocol is forwarded without editing this file, and a member a caller reaches for outside
the protocol (``store.bucket``, ``store.root``) raises ``AttributeError`` here.
"""

from __future__ import annotations

from typing import Any

from archmax.stores.base import SessionStore


def protocol_members(protocol: type) -> tuple[frozenset[str], frozenset[str]]:
    """``(values, methods)``: the public names a Protocol class declares (annotations, then functions)."""
    annotated = set(getattr(protocol, "__annotations__", {}))
    properties = {n for n, v in vars(protocol).items() if isinstance(v, property)}
    values = frozenset(n for n in annotated | properties if not n.startswith("_"))
    methods = frozenset(n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_"))
    return values, methods


VALUES, METHODS = protocol_members(SessionStore)
MEMBERS = VALUES | METHODS


def _value(name: str) -> property:
    return property(lambda self: getattr(self._inner, name), doc=f"The wrapped store's ``{name}``.")


def _method(name: str) -> Any:
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._inner, name)(*args, **kwargs)

    forward.__name__ = name
    return forward


class _Base:
    __slots__ = ("_inner",)

    def __init__(self, inner: SessionStore) -> None:
        self._inner = inner

    def __repr__(self) -> str:
        return f"ProtocolOnly({self._inner!r})"


ProtocolOnly: type = type(
    "ProtocolOnly",
    (_Base,),
    {"__slots__": (), **{n: _value(n) for n in VALUES}, **{n: _method(n) for n in METHODS}},
)
"""The wrapper class: ``ProtocolOnly(store)``; ``_inner`` is the wrapped store (for tests only)."""


def protocol_only(store: SessionStore) -> SessionStore:
    """``store`` behind a wrapper with exactly the protocol's members."""
    wrapped: SessionStore = ProtocolOnly(store)
    return wrapped
