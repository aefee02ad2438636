"""The cost model's arithmetic: item sizes, write and read units, index writes, S3 classes and dollars (bench/cost.py)."""

from __future__ import annotations

import pytest
from cost import (
    PRICES,
    Bill,
    IndexShape,
    LambdaAssumptions,
    index_shapes,
    item_size,
    per_million,
    price_table,
    read_units,
    s3_request_class,
    value_size,
    write_units,
)

KB = 1024


def test_a_3_5_kb_write_is_4_write_units_and_8_in_a_transaction():
    assert write_units(0, int(3.5 * KB)) == 4
    assert write_units(0, int(3.5 * KB), transactional=True) == 8


def test_a_write_is_billed_on_the_larger_of_the_old_and_new_item():
    assert write_units(int(9.2 * KB), 300) == 10  # shrinking a 9.2 KB item still bills 9.2 KB
    assert write_units(300, int(9.2 * KB)) == 10
    assert write_units(1 * KB, 1 * KB) == 1  # exactly 1 KB is one unit, one byte more is two
    assert write_units(0, 1 * KB + 1) == 2


def test_a_tiny_write_or_a_delete_of_nothing_still_bills_one_unit():
    assert write_units(0, 10) == 1
    assert write_units(0, 0) == 1


def test_a_9_kb_read_is_3_units_strongly_consistent_and_half_that_eventually():
    assert read_units(9 * KB, consistent=True) == 3
    assert read_units(9 * KB, consistent=False) == 1.5
    assert read_units(9 * KB, consistent=True, transactional=True) == 6


def test_a_read_of_a_missing_item_bills_the_minimum():
    assert read_units(0, consistent=True) == 1
    assert read_units(0, consistent=False) == 0.5


def test_item_size_counts_attribute_names_and_values_as_dynamodb_does():
    assert item_size({"pk": {"S": "abc"}}) == 2 + 3
    assert item_size({"é": {"S": "é"}}) == 2 + 2  # UTF-8 bytes, not characters
    assert item_size({"n": {"N": "12345"}}) == 1 + 4  # ceil(5 digits / 2) + 1
    assert item_size({"n": {"N": "-1.5"}}) == 1 + 3  # two digits + 1, and 1 for the sign
    assert item_size({"f": {"BOOL": True}, "z": {"NULL": True}}) == 2 + 2
    assert item_size({"b": {"B": b"\x00\x01\x02"}}) == 1 + 3
    assert item_size(None) == 0


def test_lists_and_maps_carry_3_bytes_plus_1_per_element():
    assert value_size({"L": []}) == 3
    assert value_size({"L": [{"S": "ab"}, {"S": "c"}]}) == 3 + (1 + 2) + (1 + 1)
    assert value_size({"M": {"k": {"S": "v"}}}) == 3 + 1 + 1 + 1


def test_an_unknown_value_type_is_refused():
    with pytest.raises(ValueError):
        value_size({"X": "?"})


SPARSE = IndexShape(
    name="due", keys=("due_shard", "resume_at"), table_keys=("pk",), projection="INCLUDE", include=("status",)
)


def test_an_item_outside_a_sparse_index_writes_no_index_entry():
    assert SPARSE.write_units({"pk": {"S": "a"}}, {"pk": {"S": "a"}, "status": {"S": "x"}}) == 0


def test_entering_or_leaving_a_sparse_index_is_one_index_write():
    parked = {"pk": {"S": "a"}, "due_shard": {"S": "0"}, "resume_at": {"S": "2025"}, "status": {"S": "parked"}}
    assert SPARSE.write_units({"pk": {"S": "a"}}, parked) == 1
    assert SPARSE.write_units(parked, {"pk": {"S": "a"}}) == 1


def test_a_changed_index_key_is_a_delete_and_a_put_and_an_unprojected_change_writes_nothing():
    parked = {"pk": {"S": "a"}, "due_shard": {"S": "0"}, "resume_at": {"S": "2025"}, "status": {"S": "parked"}}
    later = {**parked, "resume_at": {"S": "2026"}}
    assert SPARSE.write_units(parked, later) == 2
    assert SPARSE.write_units(parked, {**parked, "body": {"S": "x" * 5000}}) == 0  # not projected
    assert SPARSE.write_units(parked, {**parked, "status": {"S": "again"}}) == 1


def test_index_shapes_are_read_from_a_describe_table_answer():
    (shape,) = index_shapes(
        {
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "due",
                    "KeySchema": [{"AttributeName": "due_shard", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        }
    )
    assert shape.keys == ("due_shard",) and shape.table_keys == ("pk",) and shape.projection == "KEYS_ONLY"


def test_s3_list_is_billed_as_a_put_a_404_get_as_a_get_and_delete_is_free():
    assert s3_request_class("PutObject") == "put"
    assert s3_request_class("ListObjectsV2") == "put"
    assert s3_request_class("CopyObject") == "put"
    assert s3_request_class("GetObject") == "get"
    assert s3_request_class("HeadObject") == "get"
    assert s3_request_class("DeleteObject") is None


def test_a_bill_prices_each_line_at_list_prices():
    bill = Bill(wru=4, rru=2, s3_put=1, s3_get=1, eventbridge_entries=1, ses_messages=1)
    bill.invoke("deliver")
    lam = LambdaAssumptions(memory_mb=1024, duration_ms=100)
    lines = bill.dollars(lam=lam)
    assert lines["DynamoDB writes"] == pytest.approx(4 * 0.625e-6)
    assert lines["DynamoDB reads"] == pytest.approx(2 * 0.125e-6)
    assert lines["S3 PUT/COPY/POST/LIST"] == pytest.approx(5e-6)
    assert lines["S3 GET/HEAD"] == pytest.approx(0.4e-6)
    assert lines["Lambda requests"] == pytest.approx(0.2e-6)
    assert lines["Lambda GB-s"] == pytest.approx(0.1 * PRICES.lambda_gb_second)
    assert lines["EventBridge entries"] == pytest.approx(1e-6)
    assert lines["SES messages"] == pytest.approx(1e-4)
    assert lines["Streams reads (not Lambda)"] == 0


def test_dollars_per_million_cycles_divide_by_the_cycles_billed():
    two_cycles = Bill(wru=20)  # 10 WRU a cycle = $6.25 per million cycles
    assert per_million(two_cycles, cycles=2) == pytest.approx(6.25)
    assert two_cycles.scaled(0.5).wru == 10


def test_the_price_table_states_the_memory_and_duration_assumed_and_that_streams_are_free_for_lambda():
    text = "\n".join(price_table(lam=LambdaAssumptions(memory_mb=1024, duration_ms=100)))
    assert "1024 MB" in text and "100 ms" in text
    assert "free when a Lambda trigger reads" in text


def test_each_invocation_is_billed_at_its_functions_own_memory():
    lam = LambdaAssumptions(memory_mb=1024, duration_ms=100, per_function={"outbound": 512})
    bill = Bill()
    bill.invoke("deliver")
    bill.invoke("outbound")
    assert bill.gb_seconds(lam) == 0.1 + 0.05  # 1 GB × 100 ms + 0.5 GB × 100 ms
    assert bill.scaled(0.5).gb_seconds(lam) == (0.1 + 0.05) / 2
    assert "outbound 512 MB" in "\n".join(price_table(lam=lam))
