"""``InboxTable`` in template.yaml has what ``DynamoInbox`` relies on (DESIGN.md §3 "Inbox")."""

from __future__ import annotations

from .conftest import moto_env


def test_inbox_table_is_keyed_by_session_and_delivery_id_on_demand_with_pitr_and_ttl():
    props = moto_env().template_resource("InboxTable")
    assert props["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}


def test_pending_items_index_is_keyed_by_the_sparse_pending_shard():
    props = moto_env().template_resource("InboxTable")
    (index,) = props["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "pending-items"
    assert index["KeySchema"][0] == {"AttributeName": "pending_shard", "KeyType": "HASH"}
    assert {"AttributeName": "pending_shard", "AttributeType": "S"} in props["AttributeDefinitions"]
