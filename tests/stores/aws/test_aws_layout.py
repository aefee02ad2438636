"""Where AwsStore puts things in S3, and who may import boto3.

Rule source: BEHAVIOUR.md §9.2 (layout under ``<prefix>/``, folder names), DESIGN.md §1 ("the
engine never imports boto3 (only stores/aws, models/bedrock and hosting/ may)").
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from archmax.errors import InvalidSessionIdError
from archmax.stores.aws.layout import DUE_SHARDS, due_shard
from archmax.stores.aws.plan import SEGMENT_MAX_BYTES

from .records import record

PACKAGE = Path(__file__).resolve().parents[3] / "runtime" / "archmax"


def _keys(aws_env: Any) -> list[str]:
    return sorted(o["Key"] for o in aws_env.s3.list_objects_v2(Bucket=aws_env.bucket).get("Contents", []))


@pytest.mark.parametrize("prefix", ["tenant-a", "tenant-a/", "/tenant-a/"])
def test_everything_lives_under_the_prefix_in_the_session_folder(aws_env: Any, prefix: str) -> None:
    store = aws_env.store(prefix)
    sid = "mail/thread\\1"
    store.commit(sid, record(sid, 1, pad=2 * SEGMENT_MAX_BYTES), 0)  # too big to ride in the item: an S3 object
    store.seed(sid, {"scratchpad/notes.md": "hello"})
    store.put_spec("abc123", {"name": "bank-check"})

    keys = _keys(aws_env)
    assert keys[0] == "tenant-a/_specs/abc123.json"
    assert keys[1].startswith("tenant-a/mail%2Fthread%5C1/checkpoints/0000000001-") and keys[1].endswith(".json")
    assert keys[2] == "tenant-a/mail%2Fthread%5C1/scratchpad/notes.md"
    assert len(keys) == 3


def test_empty_prefix_is_the_bucket_root(aws_store: Any, aws_env: Any) -> None:
    aws_store.seed(".hidden", {"notes.md": "x"})
    assert _keys(aws_env) == ["%2Ehidden/notes.md"]


def test_item_is_keyed_by_the_raw_id(aws_store: Any, aws_env: Any) -> None:
    sid = "mail/thread\\1"
    aws_store.commit(sid, record(sid, 1), 0)
    item = aws_env.dynamodb.get_item(TableName=aws_env.table_name, Key={"pk": {"S": sid}})["Item"]
    assert item["version"] == {"N": "1"}


@pytest.mark.parametrize("bad", ["", "../x", "_specs/x", "a\x00b"])
def test_bad_ids_are_refused_before_any_aws_call(aws_store: Any, bad: str) -> None:
    for call in (
        lambda: aws_store.load(bad),
        lambda: aws_store.head(bad),
        lambda: aws_store.get(bad, "a.txt"),
    ):
        with pytest.raises(InvalidSessionIdError):
            call()


def test_due_shard_is_stable_and_one_of_the_few_shards() -> None:
    shards = {due_shard(f"session-{i}") for i in range(200)}
    assert shards == set(DUE_SHARDS)
    assert due_shard("chat-42") == due_shard("chat-42")


# DESIGN.md §1 names stores/aws, models/bedrock and hosting/. wiring.py (the integrator's env wiring)
# declares itself a platform-edge module like hosting/ and imports boto3 lazily; it is listed so a
# new importer anywhere else still fails here. inbound/secrets reads SSM and Secrets Manager (through
# Powertools Parameters) and names botocore's client errors (no region, no credentials) as its own.
ALLOWED = ("stores/aws/", "hosting/", "models/bedrock", "inbound/secrets")


def _imports_boto(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        if any(n.split(".")[0] in {"boto3", "botocore"} for n in names):
            return True
    return False


def test_only_aws_adapters_import_boto3_or_botocore() -> None:
    offenders = [
        str(p.relative_to(PACKAGE))
        for p in sorted(PACKAGE.rglob("*.py"))
        if _imports_boto(p) and not str(p.relative_to(PACKAGE)).startswith(ALLOWED)
    ]
    assert offenders == []
