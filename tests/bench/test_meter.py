"""The bench meter on moto: calls counted and billing units derived from the items as DynamoDB bills them (bench/_meter.py)."""

from __future__ import annotations

import pytest
from _meter import Meter

from stores.aws.moto_env import server

TABLE = "bench-meter-test"
BUCKET = "bench-meter-test"
KB = 1024


@pytest.fixture
def aws():
    srv = server()
    srv.reset()
    admin = srv.client("dynamodb")
    admin.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "due", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "due",
                "KeySchema": [{"AttributeName": "due", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    meter = Meter(admin)
    ddb, s3 = meter.attach(srv.client("dynamodb")), meter.attach(srv.client("s3"))
    s3.create_bucket(Bucket=BUCKET)
    meter.reset()
    return meter, ddb, s3


def _item(pk: str, size: int, **extra: str) -> dict:
    body = "x" * (size - len("pk") - len(pk) - len("body"))
    return {"pk": {"S": pk}, "body": {"S": body}, **{k: {"S": v} for k, v in extra.items()}}


def test_a_3_5_kb_put_is_4_write_units_and_shrinking_it_still_bills_the_old_size(aws):
    meter, ddb, _ = aws
    ddb.put_item(TableName=TABLE, Item=_item("a", int(3.5 * KB)))
    ddb.put_item(TableName=TABLE, Item=_item("a", 100))
    calls, bill = meter.reset()
    assert calls == {"dynamodb.PutItem": 2}
    assert bill.wru == 4 + 4


def test_a_failed_conditional_write_bills_the_item_it_found(aws):
    meter, ddb, _ = aws
    ddb.put_item(TableName=TABLE, Item=_item("a", int(2.5 * KB)))
    meter.reset()
    with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
        ddb.put_item(TableName=TABLE, Item=_item("a", 10), ConditionExpression="attribute_not_exists(pk)")
    calls, bill = meter.reset()
    assert calls == {"dynamodb.PutItem": 1} and bill.wru == 3


def test_a_transaction_doubles_each_items_units(aws):
    meter, ddb, _ = aws
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": _item("a", int(1.5 * KB))}},
            {"Put": {"TableName": TABLE, "Item": _item("b", 200)}},
        ]
    )
    calls, bill = meter.reset()
    assert calls == {"dynamodb.TransactWriteItems": 1}
    assert bill.wru == 2 * 2 + 2 * 1


def test_entering_a_sparse_index_adds_an_index_write(aws):
    meter, ddb, _ = aws
    ddb.put_item(TableName=TABLE, Item=_item("a", 500))
    ddb.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET due = :d",
        ExpressionAttributeValues={":d": {"S": "now"}},
    )
    _, bill = meter.reset()
    assert bill.wru == 1 + (1 + 1)  # the put; the update, and its index entry


def test_a_get_item_bills_the_whole_item_even_when_projected(aws):
    meter, ddb, _ = aws
    ddb.put_item(TableName=TABLE, Item=_item("a", 9 * KB))
    meter.reset()
    ddb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}}, ConsistentRead=True, ProjectionExpression="pk")
    ddb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}})
    ddb.get_item(TableName=TABLE, Key={"pk": {"S": "missing"}})
    calls, bill = meter.reset()
    assert calls == {"dynamodb.GetItem": 3}
    assert bill.rru == 3 + 1.5 + 0.5


def test_s3_requests_are_billed_by_class_and_a_404_is_a_get(aws):
    meter, _, s3 = aws
    s3.put_object(Bucket=BUCKET, Key="k", Body=b"x")
    s3.list_objects_v2(Bucket=BUCKET, Prefix="k")
    s3.get_object(Bucket=BUCKET, Key="k")
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket=BUCKET, Key="missing")
    s3.delete_object(Bucket=BUCKET, Key="k")
    calls, bill = meter.reset()
    assert sum(calls.values()) == 5
    assert (bill.s3_put, bill.s3_get) == (2, 2)


def test_calls_made_outside_the_clients_are_noted_and_invocations_billed(aws):
    meter, _, _ = aws
    meter.note_call("lambda.Invoke")
    meter.invoked("send")
    meter.invoked("send")
    calls, bill = meter.reset()
    assert calls == {"lambda.Invoke": 1} and bill.lambda_requests == 2 and bill.invocations == {"send": 2}


def test_a_cancelled_transaction_is_counted_as_a_call_and_as_failed(aws):
    meter, ddb, _ = aws
    ddb.put_item(TableName=TABLE, Item=_item("a", 100))
    meter.reset()
    with pytest.raises(ddb.exceptions.TransactionCanceledException):
        ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": _item("a", 10), "ConditionExpression": "attribute_not_exists(pk)"}}
            ]
        )
    calls, bill = meter.reset()
    assert calls == {"dynamodb.TransactWriteItems": 1}
    assert meter.ended_failed == {"dynamodb.TransactWriteItems: TransactionCanceledException": 1}
    assert bill.wru == 2  # billed as if it had run, on the item as it stands (the model's stated assumption)


def test_each_write_is_kept_by_function_operation_and_item_kind_with_its_index_units(aws):
    meter, ddb, _ = aws
    meter.running = "deliver"
    ddb.put_item(TableName=TABLE, Item=_item("s", 1500))
    ddb.put_item(TableName=TABLE, Item=_item("s\x1fsegment\x1ft1", 300, due="now"))
    meter.running = None
    ddb.put_item(TableName=TABLE, Item=_item("s\x1fsegment\x1ft2", 300))
    _, bill = meter.reset()
    writes = meter.ended_writes
    assert set(writes) == {
        ("deliver", "PutItem", "meter-test item"),
        ("deliver", "PutItem", "meter-test segment"),
        ("-", "PutItem", "meter-test segment"),
    }
    session = writes["deliver", "PutItem", "meter-test item"]
    assert (session.writes, session.table_units, session.largest) == (1, 2, 1500)
    assert writes["deliver", "PutItem", "meter-test segment"].index_units == {"due": 1}
    assert bill.wru == sum(w.table_units + sum(w.index_units.values()) for w in writes.values())
    assert meter.writes == {}  # the next window starts empty
