"""BEHAVIOUR.md §2.2: trigger declarations, entry states, signatures."""

from __future__ import annotations

import pytest

from archmax.spec import ReturnSpec, TriggerDecl


def test_triggers_map_to_their_entry_states_in_document_order(load):
    wf = load(
        """
        states:
          triage:
            triggers:
              email_received: {session: conversation_id}
              email_reply: {session: triggers.-1.conversationId}
          intake:
            triggers: {manual: null, timer: null}
        """
    )
    assert wf.declared_triggers() == ["email_received", "email_reply", "manual", "timer"]
    assert {t: ref.state for t, ref in wf.triggers().items()} == {
        "email_received": "triage",
        "email_reply": "triage",
        "manual": "intake",
        "timer": "intake",
    }
    assert wf.triggers()["email_reply"].decl.session == "triggers.-1.conversationId"
    assert wf.entry_state_for("timer") == "intake"


def test_undeclared_manual_enters_the_first_state_declaring_any_trigger(load):
    wf = load(
        """
        states:
          done: null
          intake:
            triggers: {email_received: null}
          other:
            triggers: {webhook: null}
        """
    )
    assert wf.entry_state_for("manual") == "intake"
    assert wf.is_declared("manual") is True
    assert "manual" not in wf.declared_triggers()
    assert wf.trigger_decl("manual") == TriggerDecl()


def test_a_declared_manual_enters_its_own_state(load):
    wf = load("states:\n  a: {triggers: {x: null}}\n  b: {triggers: {manual: null}}\n")
    assert wf.entry_state_for("manual") == "b"


def test_an_undeclared_trigger_other_than_manual_has_no_entry(load):
    wf = load("states:\n  a: {triggers: {email_reply: null}}\n")
    assert wf.entry_state_for("timer") is None
    assert wf.is_declared("timer") is False
    assert wf.trigger_decl("timer") is None


def test_a_full_declaration_loads_every_key(load):
    wf = load(
        """
        states:
          enrich:
            triggers:
              manual:
                session: mail.thread.id
                message: triggers.-1.body.content
                connection: acme-oidc
                description: Enrich one order.
                requires:
                  - order_id
                  - {name: due, type: date, description: The day the order is due.}
                returns:
                  - enrichment_file
                  - {name: delayed, type: boolean}
        """
    )
    decl = wf.trigger_decl("manual")
    assert decl.session == "mail.thread.id"
    assert decl.message == "triggers.-1.body.content"
    assert decl.connection == "acme-oidc"
    assert decl.description == "Enrich one order."
    assert decl.requires == [
        ReturnSpec(name="order_id"),
        ReturnSpec(name="due", type="date", description="The day the order is due."),
    ]
    assert decl.returns == [ReturnSpec(name="enrichment_file"), ReturnSpec(name="delayed", type="boolean")]


def test_message_false_means_firings_carry_no_message(load):
    wf = load("states:\n  a: {triggers: {ticket: {message: false}}}\n")
    assert wf.trigger_decl("ticket").message is False


def test_message_true_is_a_load_error(errors_of):
    assert errors_of("states:\n  a: {triggers: {ticket: {message: true}}}\n") == [
        "states.a.triggers.ticket.message: must be a dotted path or false"
    ]


def test_one_trigger_declared_by_two_states_uses_the_fixed_message(errors_of):
    assert errors_of(
        """
        states:
          intake: {triggers: {email_reply: null}}
          clarify: {triggers: {email_reply: null}}
        """
    ) == ["states.clarify.triggers.email_reply: Trigger 'email_reply' is declared by both 'intake' and 'clarify'"]


def test_no_state_declaring_a_trigger_uses_the_fixed_message(errors_of):
    assert errors_of("states:\n  a: {transitions: [{to: b, description: d}]}\n  b: null\n") == [
        "states: Workflow has no start state: no state declares a trigger"
    ]


def test_an_empty_trigger_id_is_a_load_error(errors_of):
    assert errors_of("states:\n  a: {triggers: {'': null, manual: null}}\n") == [
        "states.a.triggers: a trigger id must be a non-empty string, not ''"
    ]


@pytest.mark.parametrize("value", ["3", "[a]", '"text"', "true"])
def test_a_declaration_that_is_neither_mapping_nor_null_is_a_load_error(errors_of, value):
    assert errors_of(f"states:\n  a: {{triggers: {{manual: {value}}}}}\n") == [
        "states.a.triggers.manual: must be a mapping or null"
    ]


def test_triggers_must_be_a_mapping(errors_of):
    assert "states.a.triggers: must be a mapping of trigger id to declaration (or null)" in errors_of(
        "states:\n  a: {triggers: [manual]}\n"
    )


@pytest.mark.parametrize("key", ["entry", "name"])
def test_entry_and_name_in_a_declaration_are_load_errors(errors_of, key):
    assert errors_of(f"states:\n  a: {{triggers: {{manual: {{{key}: a}}}}}}\n") == [
        f"states.a.triggers.manual.{key}: Unknown key '{key}'"
    ]


def test_unknown_declaration_keys_are_kept_and_warned_about(load):
    wf = load("states:\n  intake: {triggers: {outlook-mail: {type: ap, piece: microsoft-outlook}}}\n")
    assert wf.trigger_decl("outlook-mail").extra == {"type": "ap", "piece": "microsoft-outlook"}
    assert [str(w) for w in wf.warnings] == [
        "states.intake.triggers.outlook-mail.type: Unknown key 'type'",
        "states.intake.triggers.outlook-mail.piece: Unknown key 'piece'",
    ]
    assert {w.severity for w in wf.warnings} == {"warning"}


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("'  '", "it is empty"),
        ("'${{conversation_id}}'", "write the bare path, without ${{ }}"),
        ("Conversation.id", "its first segment 'Conversation' is not a variable name"),
        ("mail..id", "it has an empty segment"),
        ("mail.id.", "it has an empty segment"),
    ],
)
def test_a_malformed_session_path_is_reported_at_the_session_key(errors_of, path, reason):
    errors = errors_of(f"states:\n  intake: {{triggers: {{email_reply: {{session: {path}}}}}}}\n")
    assert len(errors) == 1
    prefix = "states.intake.triggers.email_reply.session: the session path "
    assert errors[0].startswith(prefix)
    assert "is not usable: " + reason in errors[0]


def test_a_session_path_with_indices_and_surrounding_spaces_is_accepted_trimmed(load):
    wf = load("states:\n  a: {triggers: {t: {session: '  triggers.-1.conversationId '}}}\n")
    assert wf.trigger_decl("t").session == "triggers.-1.conversationId"


@pytest.mark.parametrize("key", ["connection", "description"])
def test_connection_and_description_must_be_non_empty(errors_of, key):
    assert errors_of(f"states:\n  a: {{triggers: {{t: {{{key}: ' '}}}}}}\n") == [
        f"states.a.triggers.t.{key}: must be a non-blank string"
    ]


def test_signature_type_must_be_one_of_the_value_types(errors_of):
    assert errors_of("states:\n  a: {triggers: {t: {requires: [{name: n, type: str}]}}}\n") == [
        "states.a.triggers.t.requires.0.type: must be one of string|integer|number|boolean|date|date-time|object|array|file"
    ]


def test_signature_entries_are_strict_mappings(errors_of):
    assert errors_of("states:\n  a: {triggers: {t: {returns: [{name: n, typ: string}]}}}\n") == [
        "states.a.triggers.t.returns.0.typ: Unknown key 'typ'"
    ]


def test_a_signature_entry_needs_a_name(errors_of):
    assert errors_of("states:\n  a: {triggers: {t: {returns: [{type: string}]}}}\n") == [
        "states.a.triggers.t.returns.0.name: is required"
    ]


def test_a_name_listed_twice_across_both_spellings_is_a_load_error(errors_of):
    assert errors_of("states:\n  a: {triggers: {t: {returns: [total, {name: total, type: number}]}}}\n") == [
        "states.a.triggers.t.returns.1: 'total' is listed twice"
    ]


@pytest.mark.parametrize("name", ["trigger", "title", "note"])
def test_runtime_names_are_refused_in_returns(errors_of, name):
    assert errors_of(f"states:\n  a: {{triggers: {{t: {{returns: [{name}]}}}}}}\n") == [
        f"states.a.triggers.t.returns.0: '{name}' cannot be a return: the runtime owns that name"
    ]


def test_trigger_and_title_are_accepted_in_requires(load):
    wf = load("states:\n  a: {triggers: {t: {requires: [trigger, title]}}}\n")
    assert [r.name for r in wf.trigger_decl("t").requires] == ["trigger", "title"]


def test_a_signature_name_must_be_a_variable_name(errors_of):
    assert errors_of("states:\n  a: {triggers: {t: {requires: [Order]}}}\n") == [
        "states.a.triggers.t.requires.0: 'Order' is not a variable name: names match ^[a-z][a-z0-9_]*$"
    ]


def test_errors_in_several_states_are_all_reported_with_the_duplicate_trigger(errors_of):
    errors = errors_of(
        """
        states:
          a: {triggers: {manual: null}, colour: red}
          b: {triggers: {manual: null}}
        """
    )
    assert errors == [
        "states.a.colour: Unknown key 'colour'",
        "states.b.triggers.manual: Trigger 'manual' is declared by both 'a' and 'b'",
    ]


# --- issue 13: signature: (signed webhooks) and mail_auth: on a trigger declaration ---


def test_signature_and_mail_auth_load_and_are_checked():
    from archmax.errors import WorkflowSpecError
    from archmax.spec import workflow_from_dict

    def load(decl):
        return workflow_from_dict({"states": {"a": {"triggers": {"hook": decl}}}}, "wf")

    wf = load(
        {"signature": {"secret": "ssm:/x", "header": "Stripe-Signature", "tolerance_s": 60}, "mail_auth": "dmarc"}
    )
    decl = wf.trigger_decl("hook")
    assert decl.signature.secret == "ssm:/x" and decl.signature.header == "Stripe-Signature"
    assert decl.signature.tolerance_s == 60 and decl.signature.timestamp_header == "X-Archmax-Timestamp"
    assert decl.mail_auth == "dmarc" and not wf.warnings
    for bad, where in [
        ({"signature": {}}, "signature.secret"),
        ({"signature": {"secret": None}}, "signature.secret"),
        ({"signature": "ssm:/x"}, "signature"),
        ({"signature": {"secret": "ssm:/x", "tolerance_s": 0}}, "signature.tolerance_s"),
        ({"signature": {"secret": "ssm:/x", "header": "Bad Header"}}, "signature.header"),
        ({"signature": {"secret": "ssm:/x", "algo": "md5"}}, "signature.algo"),
        ({"mail_auth": "strict"}, "mail_auth"),
    ]:
        with pytest.raises(WorkflowSpecError) as info:
            load(bad)
        assert f"states.a.triggers.hook.{where}" in str(info.value)
