"""Variables: names, host writes, titles, ``trigger`` and ``${{...}}`` substitution (BEHAVIOUR.md §6, §3.4)."""

from __future__ import annotations

import pytest

from archmax.errors import ArchmaxError, InvalidVariableNameError
from archmax.session.records import Variable
from archmax.session.variables import (
    VARIABLE_NAME,
    UnresolvedReferenceError,
    check_host_variables,
    is_variable_name,
    seed_host_variables,
    set_trigger_variable,
    substitute_references,
    title_problem,
)

# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("name", ["a", "reply_body", "x9", "conversation_id", "a_", "z0_9"])
def test_good_variable_names(name: str) -> None:
    assert is_variable_name(name)
    assert VARIABLE_NAME.fullmatch(name)


@pytest.mark.parametrize(
    "name", ["", "Reply", "9x", "_x", "reply-body", "reply.body", "reply body", "é", "abc\n", " abc", 7, None]
)
def test_bad_variable_names(name: object) -> None:
    assert not is_variable_name(name)


def test_check_host_variables_accepts_good_names_and_nothing() -> None:
    check_host_variables({"reply_body": "x"}, {"invoice": object()}, source="passed to send", session_id="s")
    check_host_variables(None, None, source="passed to send", session_id="s")


def test_bad_variable_name_is_refused_naming_it_and_the_source() -> None:
    with pytest.raises(InvalidVariableNameError) as info:
        check_host_variables(
            {"ok": 1, "Reply-Body": 2}, None, source="delivered to session 'chat-42'", session_id="chat-42"
        )
    assert info.value.name == "Reply-Body"
    assert info.value.source == "delivered to session 'chat-42'"
    assert info.value.session_id == "chat-42"
    assert "'Reply-Body'" in str(info.value)
    assert "delivered to session 'chat-42'" in str(info.value)


def test_bad_file_variable_name_is_refused() -> None:
    with pytest.raises(InvalidVariableNameError) as info:
        check_host_variables(None, {"Invoice": object()}, source="passed to send", session_id=None)
    assert info.value.name == "Invoice"


@pytest.mark.parametrize(("variables", "files"), [(["a"], None), ("a", None), (None, [("a", 1)])])
def test_host_variables_that_are_not_a_mapping_are_refused(variables: object, files: object) -> None:
    with pytest.raises(TypeError):
        check_host_variables(variables, files, source="passed to send", session_id="s")  # type: ignore[arg-type]


def test_name_supplied_as_variable_and_file_is_refused() -> None:
    with pytest.raises(InvalidVariableNameError) as info:
        check_host_variables({"invoice": "x"}, {"invoice": object()}, source="passed to send", session_id="s")
    assert info.value.name == "invoice"
    assert "both" in str(info.value)


# --------------------------------------------------------------------------- titles


def test_good_title_has_no_problem() -> None:
    assert title_problem("Refund for ORD-1001") is None
    assert title_problem("  padded  ") is None
    assert title_problem("x" * 200) is None
    assert title_problem("  " + "x" * 200 + "  ") is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (42, "string"),
        (None, "string"),
        (["a"], "string"),
        ("", "empty"),
        ("   \n ", "empty"),
        ("line one\nline two", "single line"),
        ("line one\r\nline two", "single line"),
        ("one\u2028two", "single line"),
        ("x" * 201, "200"),
    ],
)
def test_malformed_titles_name_their_problem(value: object, fragment: str) -> None:
    problem = title_problem(value)
    assert problem is not None and fragment in problem


# --------------------------------------------------------------------------- host writes


def test_host_writes_are_stored_locked() -> None:
    variables: dict[str, Variable] = {}
    warnings = seed_host_variables(variables, {"reply_body": "It's ORD-1001.", "count": 3})
    assert warnings == []
    assert variables == {
        "reply_body": Variable(value="It's ORD-1001.", locked=True),
        "count": Variable(value=3, locked=True),
    }


def test_host_write_replaces_an_unlocked_agent_value_and_locks_it() -> None:
    variables = {"order": Variable(value="agent guess", locked=False)}
    seed_host_variables(variables, {"order": "ORD-1001"})
    assert variables["order"] == Variable(value="ORD-1001", locked=True)


def test_last_host_write_wins_over_an_earlier_locked_one() -> None:
    variables: dict[str, Variable] = {}
    seed_host_variables(variables, {"order": "first"})
    seed_host_variables(variables, {"order": "second"})
    assert variables["order"] == Variable(value="second", locked=True)


def test_host_null_is_a_value_not_a_removal() -> None:
    variables = {"order": Variable(value="x", locked=True)}
    seed_host_variables(variables, {"order": None})
    assert variables["order"] == Variable(value=None, locked=True)


def test_stored_values_do_not_follow_later_host_mutation() -> None:
    payload = {"items": [1, 2]}
    variables: dict[str, Variable] = {}
    seed_host_variables(variables, {"payload": payload})
    payload["items"].append(3)
    assert variables["payload"].value == {"items": [1, 2]}


def test_host_title_applies_trimmed_and_unlocked_when_session_has_none() -> None:
    variables: dict[str, Variable] = {}
    assert seed_host_variables(variables, {"title": "  Refund request  "}) == []
    assert variables["title"] == Variable(value="Refund request", locked=False)


def test_host_title_does_not_replace_an_existing_title() -> None:
    variables = {"title": Variable(value="Agent's refined title", locked=False)}
    assert seed_host_variables(variables, {"title": "Host title", "other": 1}) == []
    assert variables["title"].value == "Agent's refined title"
    assert variables["other"] == Variable(value=1, locked=True)


def test_malformed_host_title_is_skipped_with_a_warning_and_others_apply() -> None:
    variables: dict[str, Variable] = {}
    warnings = seed_host_variables(variables, {"title": "two\nlines", "reply_body": "hi"})
    assert warnings == ["Title ignored: a title must be a single line"]
    assert "title" not in variables
    assert variables["reply_body"] == Variable(value="hi", locked=True)


def test_malformed_host_title_warns_even_when_a_title_exists() -> None:
    variables = {"title": Variable(value="Kept", locked=False)}
    warnings = seed_host_variables(variables, {"title": ""})
    assert warnings == ["Title ignored: a title must not be empty"]
    assert variables["title"].value == "Kept"


def test_bad_name_in_a_seed_writes_nothing() -> None:
    variables: dict[str, Variable] = {"kept": Variable(value=1, locked=False)}
    with pytest.raises(InvalidVariableNameError):
        seed_host_variables(variables, {"good": 1, "Bad": 2})
    assert variables == {"kept": Variable(value=1, locked=False)}


def test_trigger_variable_is_a_locked_string_replaced_at_each_firing() -> None:
    variables: dict[str, Variable] = {}
    set_trigger_variable(variables, "email_received")
    assert variables["trigger"] == Variable(value="email_received", locked=True)
    set_trigger_variable(variables, "email_reply")
    assert variables["trigger"] == Variable(value="email_reply", locked=True)


# --------------------------------------------------------------------------- ${{...}} substitution

SESSION = {
    "order": Variable(value={"id": "ORD-1001", "lines": [{"sku": "A"}, {"sku": "B"}], "total": 12.5}, locked=True),
    "customer": Variable(value="Ada", locked=False),
    "count": Variable(value=3, locked=False),
    "nothing": Variable(value=None, locked=False),
    "trigger": Variable(value="email_reply", locked=True),
}


def test_whole_string_reference_keeps_the_value_type() -> None:
    assert substitute_references({"id": "${{order.id}}"}, SESSION) == {"id": "ORD-1001"}
    assert substitute_references({"n": "${{count}}"}, SESSION) == {"n": 3}
    assert substitute_references({"o": "${{order.lines.-1}}"}, SESSION) == {"o": {"sku": "B"}}
    assert substitute_references({"x": "${{nothing}}"}, SESSION) == {"x": None}


def test_embedded_references_become_text() -> None:
    args = {"subject": "Order ${{order.id}} for ${{customer}}: ${{count}} items, ${{order.lines.0}}"}
    assert substitute_references(args, SESSION) == {"subject": 'Order ORD-1001 for Ada: 3 items, {"sku":"A"}'}


def test_whitespace_inside_the_braces_is_allowed() -> None:
    assert substitute_references("${{ order.id }}", SESSION) == "ORD-1001"


def test_references_are_substituted_through_nested_arguments() -> None:
    args = {"to": ["${{customer}}", "ops"], "meta": {"trigger": "${{trigger}}", "n": 5, "ok": True}}
    assert substitute_references(args, SESSION) == {
        "to": ["Ada", "ops"],
        "meta": {"trigger": "email_reply", "n": 5, "ok": True},
    }


def test_keys_are_not_substituted_and_input_is_not_mutated() -> None:
    args = {"${{customer}}": "${{customer}}"}
    result = substitute_references(args, SESSION)
    assert result == {"${{customer}}": "Ada"}
    assert args == {"${{customer}}": "${{customer}}"}


def test_substituted_value_is_a_copy_of_the_variable() -> None:
    result = substitute_references({"o": "${{order}}"}, SESSION)
    result["o"]["id"] = "changed"
    assert SESSION["order"].value["id"] == "ORD-1001"


def test_double_dollar_escapes_one_reference() -> None:
    assert substitute_references("$${{order.id}}", SESSION) == "${{order.id}}"
    assert substitute_references("use $${{x}} for ${{customer}}", SESSION) == "use ${{x}} for Ada"


def test_text_without_references_is_untouched() -> None:
    assert substitute_references("cost: $5 {braces} }} ${ {", SESSION) == "cost: $5 {braces} }} ${ {"


def test_plain_values_work_as_the_variable_mapping() -> None:
    assert substitute_references("${{a.0}}", {"a": ["x"]}) == "x"


def test_reference_to_an_unset_variable_is_refused_listing_what_is_set() -> None:
    with pytest.raises(UnresolvedReferenceError) as info:
        substitute_references({"x": "${{ordr.id}}"}, SESSION)
    assert info.value.reference == "${{ordr.id}}"
    assert "'ordr'" in str(info.value)
    assert "count, customer, nothing, order, trigger" in str(info.value)


def test_path_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(UnresolvedReferenceError) as info:
        substitute_references("Order ${{order.lines.5.sku}}", SESSION)
    assert "order.lines.5.sku" in str(info.value)
    assert not isinstance(info.value, ArchmaxError)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("text", ["${{}}", "${{Order}}", "${{order..id}}", "a ${{ }} b"])
def test_malformed_reference_is_refused(text: str) -> None:
    with pytest.raises(UnresolvedReferenceError):
        substitute_references(text, SESSION)


def test_unterminated_reference_is_refused_with_the_escape_hint() -> None:
    with pytest.raises(UnresolvedReferenceError) as info:
        substitute_references("price ${{order.total", SESSION)
    assert "$${{" in str(info.value)
