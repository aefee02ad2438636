"""template.yaml checked offline: cfn-lint, the SAM transform, cfn-lint again on its output.

Rule source: DESIGN.md §6 ("The template is checked offline"), CONVENTIONS.md (Template).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint
from cfnlint.decode.decode import decode_str
from samtranslator.translator.transform import transform

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


class _OfflinePolicies:
    """A managed-policy loader that never calls IAM (the transform stays offline)."""

    def load(self) -> dict[str, str]:
        return {}


def _decoded() -> dict[str, Any]:
    doc, errors = decode_str(TEMPLATE.read_text(encoding="utf-8"))
    assert not errors, errors
    return json.loads(json.dumps(doc))


def _packaged(doc: dict[str, Any]) -> dict[str, Any]:
    """What ``sam package`` does to local artifact paths: point them at S3 (the transform needs that)."""
    for resource in doc.get("Resources", {}).values():
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://archmax-artifacts/{props[key].strip('/')}.zip"
    return doc


@pytest.fixture
def transformed(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The SAM transform's output. The translator asks boto3 for a region, so give it one."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return transform(_packaged(_decoded()), {"AWS::Region": "us-east-1"}, _OfflinePolicies())


def _describe(matches: list[Any]) -> str:
    return "\n".join(str(m) for m in matches)


def test_template_passes_cfn_lint() -> None:
    matches = lint(TEMPLATE.read_text(encoding="utf-8"))
    assert matches == [], _describe(matches)


def test_sam_transform_output_passes_cfn_lint(transformed: dict[str, Any]) -> None:
    output = transformed
    assert "Transform" not in output
    matches = lint(json.dumps(output))
    assert matches == [], _describe(matches)


def test_sessions_table_keeps_one_item_per_session_keyed_by_pk(transformed: dict[str, Any]) -> None:
    table = transformed["Resources"]["SessionsTable"]["Properties"]
    assert table["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}


def test_due_parks_index_is_keyed_by_shard_and_resume_at_and_projects_sweep_fields(
    transformed: dict[str, Any],
) -> None:
    table = transformed["Resources"]["SessionsTable"]["Properties"]
    (index,) = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "due-parks"]
    assert index["KeySchema"] == [
        {"AttributeName": "due_shard", "KeyType": "HASH"},
        {"AttributeName": "resume_at", "KeyType": "RANGE"},
    ]
    types = {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]}
    assert types == {
        "pk": "S", "due_shard": "S", "resume_at": "S", "lease_shard": "S", "lease_expires_at": "S", "outbox_shard": "S",
        "park_key": "S", "parked_at": "S",
    }  # fmt: skip
    # The sweep filters by workflow and reports status/version without reading the base item.
    assert index["Projection"]["ProjectionType"] in {"INCLUDE", "ALL"}
    if index["Projection"]["ProjectionType"] == "INCLUDE":
        assert {"workflow", "status", "version"} <= set(index["Projection"]["NonKeyAttributes"])


def test_open_parks_index_is_keyed_by_workflow_shard_and_parked_at(transformed: dict[str, Any]) -> None:
    table = transformed["Resources"]["SessionsTable"]["Properties"]
    (index,) = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "open-parks"]
    assert index["KeySchema"] == [
        {"AttributeName": "park_key", "KeyType": "HASH"},
        {"AttributeName": "parked_at", "KeyType": "RANGE"},
    ]
    # The oldest park is the first item of each shard: its keys (pk among them) are all it needs.
    assert index["Projection"]["ProjectionType"] in {"KEYS_ONLY", "INCLUDE", "ALL"}


def test_stale_leases_index_is_keyed_by_shard_and_lease_expiry_and_projects_the_workflow(
    transformed: dict[str, Any],
) -> None:
    table = transformed["Resources"]["SessionsTable"]["Properties"]
    (index,) = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "stale-leases"]
    assert index["KeySchema"] == [
        {"AttributeName": "lease_shard", "KeyType": "HASH"},
        {"AttributeName": "lease_expires_at", "KeyType": "RANGE"},
    ]
    # The sweep filters stale turns by workflow without reading the base item.
    assert index["Projection"]["ProjectionType"] in {"INCLUDE", "ALL"}
    if index["Projection"]["ProjectionType"] == "INCLUDE":
        assert "workflow" in index["Projection"]["NonKeyAttributes"]


def test_sessions_bucket_is_private_encrypted_unversioned_and_expires_inbound_mail(
    transformed: dict[str, Any],
) -> None:
    bucket = transformed["Resources"]["SessionsBucket"]["Properties"]
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert "VersioningConfiguration" not in bucket
    rules = bucket["LifecycleConfiguration"]["Rules"]
    inbound = [r for r in rules if r.get("Prefix") == "inbound/" and r["Status"] == "Enabled"]
    assert len(inbound) == 1 and "ExpirationInDays" in inbound[0]


@pytest.mark.parametrize("name", ["SessionsTableName", "SessionsBucketName", "DueParksIndexName"])
def test_outputs_name_what_a_store_needs(name: str, transformed: dict[str, Any]) -> None:
    assert name in transformed["Outputs"]


def test_table_definition_used_by_aws_tests_is_read_from_the_template() -> None:
    # The moto fixtures build their table from this helper; drift would fail the AWS tests.
    import importlib.util
    import sys

    path = TEMPLATE.parent / "tests" / "stores" / "aws" / "moto_env.py"
    name = "archmax_tests_moto_env"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    definition = sys.modules[name].table_definition()
    table = _decoded()["Resources"]["SessionsTable"]["Properties"]
    assert definition["KeySchema"] == table["KeySchema"]
    assert definition["GlobalSecondaryIndexes"] == table["GlobalSecondaryIndexes"]
    assert definition["AttributeDefinitions"] == table["AttributeDefinitions"]
