"""template.yaml's outbox backstop after the SAM transform (issue 20 item 2).

The sweep finds sessions with unsent outbox entries through a sparse index (never a scan), and the
timer function, which runs the sweep, sends them with the outbound function's own settings and
permissions: SES scoped to the identity (when mail is on), events put scoped to the bus.
"""

from __future__ import annotations

from typing import Any

from .test_outbound_template import _actions, _statements, resources  # noqa: F401 - the fixture


def test_the_outbox_pending_index_is_keyed_by_shard_and_session_and_projects_the_workflow(resources):  # noqa: F811
    table = resources["SessionsTable"]["Properties"]
    (index,) = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "outbox-pending"]
    assert index["KeySchema"] == [
        {"AttributeName": "outbox_shard", "KeyType": "HASH"},
        {"AttributeName": "pk", "KeyType": "RANGE"},
    ]
    assert {"workflow"} <= set(index["Projection"]["NonKeyAttributes"])


def test_the_timer_sends_with_the_outbound_functions_settings_and_permissions(resources):  # noqa: F811
    timer_env = resources["TimerFunction"]["Properties"]["Environment"]["Variables"]
    outbound_env = resources["OutboundFunction"]["Properties"]["Environment"]["Variables"]
    for name in ("ARCHMAX_MAIL_TRANSPORT", "ARCHMAX_MAIL_FROM", "ARCHMAX_EVENT_BUS", "ARCHMAX_REPLY_SECRET_PARAM"):
        assert timer_env[name] == outbound_env[name]
    puts = [s for _, s in _statements(resources["TimerFunctionRole"]) if "events:PutEvents" in _actions(s)]
    assert puts and all("ArchmaxEventBus" in str(s["Resource"]) for s in puts)
    mail = resources["TimerOutboxMailPolicy"]
    assert mail["Condition"] == "SendMail" and mail["Properties"]["Roles"] == [{"Ref": "TimerFunctionRole"}]
    (statement,) = mail["Properties"]["PolicyDocument"]["Statement"]
    assert "ses:SendEmail" in _actions(statement) and "identity/${MailIdentity}" in str(statement["Resource"])
    secret: dict[str, Any] = resources["TimerOutboxSecretPolicy"]
    assert secret["Condition"] == "SignReplies"
