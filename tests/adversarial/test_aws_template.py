"""Adversarial: what each function of template.yaml may reach, read off the SAM transform's output.

cfn-lint passing says the template is well-formed, not that it is least privilege. These tests
evaluate each function role's statements (a small allow-only evaluator: action and resource
wildcards, no conditions) against the objects the function really touches, and against the ones
it must not: raw inbound mail is read by the send function only; nothing may change the bucket's
lifecycle rules or object ACLs; the SES permission names the receipt rule set that may invoke.

Rule sources: issue 4 item 4 ("least-privilege policies"), DESIGN.md §3 (S3 layout: session
folders under the store prefix, raw mail under ``inbound/``), §4 (what each function does: resolve
"never runs a turn"), CONVENTIONS.md (Template: "SAM policy templates scoped with !Ref").
"""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode.decode import decode_str
from samtranslator.translator.transform import transform

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
BUCKET = "arn:aws:s3:::BUCKET"
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::StackName": "stk",
}
FUNCTIONS = ["SendFunction", "DeliverFunction", "ResolveFunction", "TimerFunction"]
"""The functions behind the API and the schedule; the SQS wake function's role is tested in tests/template."""
DEFAULT_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
PARAMETERS = {"ModelId": f"bedrock:{DEFAULT_MODEL}"}  # the template's default
TABLE_ARNS = {f"{t}.Arn": f"arn:aws:dynamodb:us-east-1:123456789012:table/{t}" for t in ("SessionsTable", "InboxTable")}


class _OfflinePolicies:
    def load(self) -> dict[str, str]:
        return {}


def _packaged(doc: dict[str, Any]) -> dict[str, Any]:
    for resource in doc.get("Resources", {}).values():
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://archmax-artifacts/{props[key].strip('/')}.zip"
    return doc


@pytest.fixture(scope="module")
def output() -> dict[str, Any]:
    doc, errors = decode_str(TEMPLATE.read_text(encoding="utf-8"))
    assert not errors, errors
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        return transform(_packaged(json.loads(json.dumps(doc))), {"AWS::Region": "us-east-1"}, _OfflinePolicies())


def _render(value: Any) -> str:
    """A resource expression as a plain ARN: the sessions bucket becomes ``BUCKET``, pseudo parameters fixed values."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        ref = value["Ref"]
        return {"SessionsBucket": "BUCKET", **PARAMETERS}.get(ref, PSEUDO.get(ref, ref))
    if isinstance(value, dict) and "Fn::Select" in value:
        index, items = value["Fn::Select"]
        return _render(items)[int(index)] if isinstance(items, dict) else _render(items[int(index)])
    if isinstance(value, dict) and "Fn::Split" in value:
        sep, text = value["Fn::Split"]
        return _render(text).split(sep)  # type: ignore[return-value]
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        name = ".".join(value["Fn::GetAtt"])
        return {"SessionsBucket.Arn": BUCKET, **TABLE_ARNS}.get(name, name)
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        text, names = (sub, {}) if isinstance(sub, str) else (sub[0], sub[1])

        def one(match: re.Match[str]) -> str:
            key = match.group(1)
            if key in names:
                return _render(names[key])
            if key in PSEUDO:
                return PSEUDO[key]
            if key in PARAMETERS:
                return PARAMETERS[key]
            if key == "SessionsBucket.Arn":
                return BUCKET
            if key in TABLE_ARNS:
                return TABLE_ARNS[key]
            if key == "SessionsBucket":
                return "BUCKET"
            return key

        return re.sub(r"\$\{([^}]+)\}", one, text)
    raise AssertionError(f"cannot render {value!r}")


def statements(output: dict[str, Any], function: str) -> list[tuple[list[str], list[str]]]:
    """``(actions, resources)`` of every Allow statement in the function role's inline policies."""
    role = output["Resources"][f"{function}Role"]["Properties"]
    out = []
    for policy in role.get("Policies", []):
        for st in policy["PolicyDocument"]["Statement"]:
            assert st["Effect"] == "Allow"
            actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
            out.append((actions, [_render(r) for r in resources]))
    return out


def allowed(output: dict[str, Any], function: str, action: str, resource: str) -> bool:
    return any(
        any(fnmatchcase(action, a) for a in actions) and any(fnmatchcase(resource, r) for r in resources)
        for actions, resources in statements(output, function)
    )


def sessions_prefix(output: dict[str, Any]) -> str:
    env = output["Resources"]["SendFunction"]["Properties"]["Environment"]["Variables"]
    return env["SESSIONS_PREFIX"]


# ---------------------------------------------------------------- what each function needs still works


@pytest.mark.parametrize("function", ["SendFunction", "DeliverFunction", "TimerFunction"])
def test_a_function_that_runs_turns_can_read_write_and_tidy_session_objects(output: Any, function: str) -> None:
    key = f"{BUCKET}/{sessions_prefix(output)}/AAQk-1/checkpoints/0000000001-0123456789abcdef.json"
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert allowed(output, function, action, key), action
    assert allowed(output, function, "s3:ListBucket", BUCKET)  # a missing key is a 404 only with ListBucket


def test_the_resolve_function_reads_session_objects_and_writes_none(output: Any) -> None:
    key = f"{BUCKET}/{sessions_prefix(output)}/AAQk-1/checkpoints/0000000001-0123456789abcdef.json"
    assert allowed(output, "ResolveFunction", "s3:GetObject", key)
    assert allowed(output, "ResolveFunction", "s3:ListBucket", BUCKET)
    for action in ("s3:PutObject", "s3:DeleteObject"):
        assert not allowed(output, "ResolveFunction", action, key)


def test_the_send_function_reads_raw_inbound_mail(output: Any) -> None:
    assert allowed(output, "SendFunction", "s3:GetObject", f"{BUCKET}/inbound/k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01")


# ---------------------------------------------------------------- what no function needs


@pytest.mark.parametrize("function", ["DeliverFunction", "ResolveFunction", "TimerFunction"])
def test_only_the_send_function_can_read_raw_inbound_mail(output: Any, function: str) -> None:
    assert not allowed(output, function, "s3:GetObject", f"{BUCKET}/inbound/k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_no_function_can_write_or_delete_raw_inbound_mail(output: Any, function: str) -> None:
    for action in ("s3:PutObject", "s3:DeleteObject"):
        assert not allowed(output, function, action, f"{BUCKET}/inbound/k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01")


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize(
    "action",
    ["s3:PutLifecycleConfiguration", "s3:PutObjectAcl", "s3:PutBucketPolicy", "s3:DeleteBucket", "s3:PutBucketAcl"],
)
def test_no_function_can_change_the_buckets_rules_or_acls(output: Any, function: str, action: str) -> None:
    assert not allowed(output, function, action, BUCKET)
    assert not allowed(output, function, action, f"{BUCKET}/{sessions_prefix(output)}/AAQk-1/notes.md")


@pytest.mark.parametrize("function", FUNCTIONS)
def test_no_function_can_touch_objects_outside_the_store_prefix_and_inbound(output: Any, function: str) -> None:
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert not allowed(output, function, action, f"{BUCKET}/elsewhere/x.json"), action


def test_ses_may_invoke_the_send_function_only_from_this_stacks_receipt_rule_set(output: Any) -> None:
    permission = output["Resources"]["SendFunctionSesPermission"]["Properties"]
    assert permission["Principal"] == "ses.amazonaws.com"
    assert "SourceArn" in permission, "any SES receipt rule of the account could invoke the send function"
    arn = _render(permission["SourceArn"])
    assert arn.startswith("arn:aws:ses:us-east-1:123456789012:receipt-rule-set/InboundMailRuleSet:receipt-rule/")


# ---------------------------------------------------------------- issue 13 item 6: least privilege, statement by statement


def conditions(output: dict[str, Any], function: str, action: str) -> list[dict[str, Any]]:
    role = output["Resources"][f"{function}Role"]["Properties"]
    return [
        st.get("Condition") or {}
        for policy in role.get("Policies", [])
        for st in policy["PolicyDocument"]["Statement"]
        if action in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])
    ]


@pytest.mark.parametrize(
    ("function", "name"), [("SendFunction", "send"), ("DeliverFunction", "deliver"), ("TimerFunction", "timer")]
)
def test_a_function_may_invoke_exactly_itself(output: Any, function: str, name: str) -> None:
    arn = "arn:aws:lambda:us-east-1:123456789012:function:stk-"
    assert allowed(output, function, "lambda:InvokeFunction", arn + name)
    for other in (f"{name}er", f"{name}-x", "send", "deliver", "timer", "resolve"):
        if other != name:
            assert not allowed(output, function, "lambda:InvokeFunction", arn + other), other
    assert not allowed(output, "ResolveFunction", "lambda:InvokeFunction", arn + "resolve")


@pytest.mark.parametrize("function", ["SendFunction", "DeliverFunction", "TimerFunction"])
def test_bedrock_is_limited_to_the_model_the_model_id_parameter_names(output: Any, function: str) -> None:
    assert allowed(
        output, function, "bedrock:InvokeModel", f"arn:aws:bedrock:us-east-1::foundation-model/{DEFAULT_MODEL}"
    )
    assert allowed(
        output, function, "bedrock:InvokeModel", f"arn:aws:bedrock:us-west-2::foundation-model/{DEFAULT_MODEL}"
    )
    assert allowed(
        output, function, "bedrock:InvokeModel",
        f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{DEFAULT_MODEL}",
    )  # fmt: skip
    for other in ("anthropic.claude-3-opus-20240229-v1:0", "meta.llama3-70b-instruct-v1:0"):
        assert not allowed(
            output, function, "bedrock:InvokeModel", f"arn:aws:bedrock:us-east-1::foundation-model/{other}"
        )
    assert not allowed(
        output, function, "bedrock:InvokeModel", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/x"
    )


@pytest.mark.parametrize("function", FUNCTIONS)
def test_listing_the_bucket_is_conditioned_on_the_store_prefix(output: Any, function: str) -> None:
    found = conditions(output, function, "s3:ListBucket")
    assert found and all(c == {"StringLikeIfExists": {"s3:prefix": [f"{sessions_prefix(output)}/*"]}} for c in found)


UNUSED_DYNAMODB = ["dynamodb:Scan", "dynamodb:DeleteItem", "dynamodb:DeleteTable", "dynamodb:UpdateTable"]
SESSIONS = "arn:aws:dynamodb:us-east-1:123456789012:table/SessionsTable"
INBOX = "arn:aws:dynamodb:us-east-1:123456789012:table/InboxTable"


@pytest.mark.parametrize("function", FUNCTIONS)
def test_dynamodb_actions_are_only_those_the_code_calls(output: Any, function: str) -> None:
    for action in UNUSED_DYNAMODB:
        assert not allowed(output, function, action, SESSIONS), action
    for action in ("dynamodb:Scan", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"):
        assert not allowed(output, function, action, INBOX), action
    assert allowed(output, function, "dynamodb:GetItem", SESSIONS)
    writes = function != "ResolveFunction"
    assert allowed(output, function, "dynamodb:UpdateItem", SESSIONS) is writes
    # a committer asks which outbox entries are settled, a load reads segment items: BatchGetItem (issue 24)
    assert allowed(output, function, "dynamodb:BatchGetItem", SESSIONS)
    # a commit puts a segment item before the write that lists it, and deletes those a snapshot unlisted
    assert allowed(output, function, "dynamodb:PutItem", SESSIONS) is writes
    assert allowed(output, function, "dynamodb:BatchWriteItem", SESSIONS) is writes
    assert allowed(output, function, "dynamodb:Query", SESSIONS + "/index/due-parks") is writes
    # ConditionCheckItem: the drain's arrivals check rides the turn's last commit (issue 24)
    for action in ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query",
                   "dynamodb:ConditionCheckItem"):  # fmt: skip
        assert allowed(output, function, action, INBOX) is writes, action
