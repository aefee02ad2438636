"""bench/_aws.py's ``RoundTripGate``: a network round trip per request, slept outside moto's one-at-a-time lock.

Issue 24 goal 5: the bench's latency rows give every AWS request the round trip a deployed caller
pays, with concurrent requests' round trips overlapping (as on a network) while moto's own work
stays serialized. Asserted structurally, never by time: the injected sleep records its calls and
meets the other request on a barrier, which it can only pass if both requests sleep at once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from _aws import MotoServer, RoundTripGate

WAIT = 10.0  # seconds a barrier or event waits before the test fails (a deadlock guard, not a timing)


def _ok_app(environ: Any, start_response: Any) -> list[bytes]:
    start_response("200 OK", [])
    return [environ["PATH_INFO"].encode()]


def _call(gate: RoundTripGate, path: str) -> list[bytes]:
    return list(gate({"PATH_INFO": path}, lambda status, headers: None))


def _in_threads(*bodies: Any) -> None:
    errors: list[BaseException] = []

    def run(body: Any) -> None:
        try:
            body()
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(body,)) for body in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 2)
    assert not errors, errors


def test_two_concurrent_requests_sleep_their_round_trips_at_the_same_time():
    barrier = threading.Barrier(2, timeout=WAIT)  # passes only when both requests are sleeping
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        barrier.wait()

    gate = RoundTripGate(_ok_app, latency_ms=4, sleep=sleep)
    answers: list[list[bytes]] = []
    _in_threads(lambda: answers.append(_call(gate, "/a")), lambda: answers.append(_call(gate, "/b")))
    assert sorted(answers) == [[b"/a"], [b"/b"]]
    assert slept == [0.004, 0.004]  # seconds, one round trip per request
    assert gate.requests == 2
    assert gate.max_sleeping == 2
    assert gate.sleeping == 0


def test_a_request_sleeps_its_round_trip_while_another_is_inside_moto():
    first_inside, second_sleeping = threading.Event(), threading.Event()
    seen: list[bool] = []

    def app(environ: Any, start_response: Any) -> list[bytes]:
        if environ["PATH_INFO"] == "/first":  # holds moto's lock until the second request sleeps
            first_inside.set()
            seen.append(second_sleeping.wait(WAIT))
        return _ok_app(environ, start_response)

    def sleep(seconds: float) -> None:
        if first_inside.is_set():  # the second request's round trip
            second_sleeping.set()

    gate = RoundTripGate(app, latency_ms=1, sleep=sleep)

    def second() -> None:
        assert first_inside.wait(WAIT)
        _call(gate, "/second")

    _in_threads(lambda: _call(gate, "/first"), second)
    assert seen == [True]  # the second request's round trip ran while the first held the lock
    assert gate.requests == 2


def test_at_zero_latency_nothing_sleeps_and_requests_are_counted():
    slept: list[float] = []
    gate = RoundTripGate(_ok_app, sleep=slept.append)
    assert _call(gate, "/x") == [b"/x"]
    assert slept == []
    assert (gate.requests, gate.max_sleeping) == (1, 0)


def test_a_negative_latency_is_refused_and_changes_nothing():
    gate = RoundTripGate(_ok_app, latency_ms=4)
    with pytest.raises(ValueError, match="latency_ms"):
        gate.latency_ms = -1
    assert gate.latency_ms == 4


def test_the_bench_server_applies_the_round_trip_to_every_http_request_outside_the_lock():
    barrier = threading.Barrier(2, timeout=WAIT)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        barrier.wait()

    server = MotoServer(sleep=sleep)  # 0 ms while the clients are built and the server answers
    try:
        clients = [server.new_client("dynamodb"), server.new_client("dynamodb")]
        before = server.gate.requests
        server.latency_ms = 3
        _in_threads(*[lambda c=c: c.list_tables() for c in clients])
        server.latency_ms = 0
        assert slept == [0.003, 0.003]
        assert server.gate.requests - before == 2  # one HTTP request per call, each its round trip
        assert server.gate.max_sleeping == 2  # both slept at once: the real server's threads overlap
    finally:
        server.stop()
