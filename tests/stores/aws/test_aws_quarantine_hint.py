"""AwsStore's quarantine hint: the item's set of possibly-held mail ids, which commits never touch.

Rule source: issue 10 ("resolve / summary: 1 call"), issue 13 item 1 (held mail is visible in the
session summary); the hint's contract is in ``archmax.inbound.quarantine``'s module docstring.
On the moto server; the end-to-end tests (held, released, crashes) are in tests/handlers/test_mail_auth.py.
"""

from __future__ import annotations

from typing import Any

from archmax.session.records import SessionStatus

from .records import record


def _item(aws_env: Any, sid: str) -> dict[str, Any] | None:
    key = {"pk": {"S": sid}}
    return aws_env.dynamodb.get_item(TableName=aws_env.table_name, Key=key, ConsistentRead=True).get("Item")


def test_a_hint_for_a_session_with_no_item_writes_nothing_and_the_first_commit_still_lands(aws_env: Any) -> None:
    store = aws_env.store()
    store.note_held_mail("new", "ses-1", held=True)
    assert _item(aws_env, "new") is None  # no stub item: the first commit's attribute_not_exists(pk) holds
    store.commit("new", record("new", 1), 0)
    assert store.load("new").version == 1


def test_commits_from_cached_and_cold_views_keep_the_hint(aws_env: Any) -> None:
    sid, writer = "kept", aws_env.store()
    writer.commit(sid, record(sid, 1), 0)
    aws_env.store().note_held_mail(sid, "ses-1", held=True)  # another process holds a mail
    writer.commit(sid, record(sid, 2, messages=2), 1)  # from its cached plan: sends only changed attributes
    aws_env.store().commit(sid, record(sid, 3, messages=3, status=SessionStatus.COMPLETED), 2)  # cold: reads first
    assert _item(aws_env, sid)["quarantine_hint"] == {"SS": ["ses-1"]}
    reader = aws_env.store()
    loaded = reader.load(sid)
    assert reader.held_mail_hint(sid, loaded.version) == frozenset({"ses-1"})
    reader.note_held_mail(sid, "ses-1", held=False)
    assert "quarantine_hint" not in _item(aws_env, sid)  # the last id out removes the set
    assert reader.held_mail_hint(sid, reader.load(sid).version) == frozenset()


def test_the_hint_answers_only_for_the_version_this_thread_just_read(aws_env: Any) -> None:
    store = aws_env.store()
    store.commit("a", record("a", 1), 0)
    store.commit("b", record("b", 1), 0)
    assert store.held_mail_hint("a", 1) is None  # nothing read yet: unknown, the caller lists
    store.load("a")
    assert store.held_mail_hint("a", 1) == frozenset()
    assert store.held_mail_hint("a", 2) is None and store.held_mail_hint("b", 1) is None
    store.load("b")
    assert store.held_mail_hint("a", 1) is None


def test_delete_removes_the_hinted_item(aws_env: Any) -> None:
    store = aws_env.store()
    store.commit("gone", record("gone", 1), 0)
    store.note_held_mail("gone", "ses-1", held=True)
    assert store.delete("gone") is True
    assert _item(aws_env, "gone") is None and store.load("gone") is None
