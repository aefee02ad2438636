"""Fuzz: forged events through every Lambda handler on moto; never a 5xx, and a refusal writes nothing.

Rule source: issue 21 "Done when" (the fuzz budget: 0 5xx over >= 10,000 forged events, refusals
write nothing), issue 4 item 3 and DESIGN.md §4 (a malformed event gets a 4xx with a JSON body
naming the problem, or a typed ``{"ok": false, ...}`` on a direct invoke; nothing is half-written),
issue 13 / 21 (signed webhooks, mail admission, quarantine, park identity).

Each example starts from a real-shaped event (``events/*.json``) and mutates it: hostile session
ids, trigger names, park ids, bodies and types on the HTTP routes; missing, stale, wrong or
borrowed webhook signatures; forged SES verdicts, strangers re-sending a known Message-ID, forged
reply tokens, missing mail objects and malformed MIME from ``../shared/samples`` (read in place);
junk direct invokes; non-stream events to the outbound function. Every item of both tables and
every bucket object is compared before and after (``Deployment.snapshot``):

* a refusal (a 4xx, a ``200 DuplicateDeliveryError``, a typed ``ok: false``, an SES record
  ``refused`` or ``error``) wrote nothing;
* an SES record ``quarantined`` wrote only its quarantine (``quarantine/<SES id>.eml`` and ``.json``
  under the session's prefix, and the session item's ``quarantine_hint``);
* a 2xx that changed anything is allowed only for an event the rules accept (a stranger's mail
  never lands in an existing session; a stale park id, a bad signature, a bad id never do);
* a read (``GET``, ``POST /resolve``, the resolve function) writes nothing whatever it answers.

Counts: ``ARCHMAX_FUZZ_PROFILE`` ``ci`` (the default: a few examples per entry point, derandomized)
or ``fuzz`` (``make fuzz``: >= 10,000 events in all); ``ARCHMAX_FUZZ_EXAMPLES`` sets the examples per
test (there are :data:`TESTS` tests). The closing table (``conftest.py``) prints events per entry
point and answers per status.
"""

from __future__ import annotations

import base64
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archmax.clock import FakeClock
from archmax.errors import InvalidSessionIdError
from archmax.handlers import outbound
from archmax.inbound.reply_token import sign as sign_token
from archmax.inbound.ses import is_ses_event
from archmax.inbound.webhook import signature_for
from archmax.session.ids import validate_session_id

from . import fuzz_counts
from ._aws_env import REPO, SUPPORT_INBOX, Deployment, event, fresh_aws, moto_env

# ---------------------------------------------------------------- counts (profile-driven)

TESTS = 9
"""How many fuzz tests this module holds: ``make fuzz``'s total is split evenly between them."""
PROFILE = os.environ.get("ARCHMAX_FUZZ_PROFILE", "ci")
_PER_TEST = {"ci": 10, "fuzz": math.ceil(10_000 / TESTS) + 10}[PROFILE]
EXAMPLES = int(os.environ.get("ARCHMAX_FUZZ_EXAMPLES") or _PER_TEST)
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=PROFILE == "ci",
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# ---------------------------------------------------------------- the world every forged event meets

SECRET = b"whsec_fuzz_secret_value_0001"
REPLY_SECRET = b"reply-secret-for-the-fuzz-0001"
NOW = 1735689600  # 2025-01-01T00:00:00Z, the world's clock
PARK_FOREVER = {"say": "Which order is this about?", "call": {"archmax_wait": {"reason": "the order number"}}}
FIRST_EML = (SUPPORT_INBOX / "emails" / "01-first.eml").read_bytes()
FIRST_ID = "3f1c2a9e-5b7d-4e21-9c3a-0d8e6f4b2a11@example.org"
SES_ID = "k5lm0f3ua9q1ed7c8rn2h4oe6s2v9example01"
MAIL_SESSION = f"mail:{FIRST_ID}"
PAY_BODY = json.dumps({"conversation_id": "pay-1", "message": "Payment pi_1 succeeded."}).encode()
EXISTING = ("AAQk-1", MAIL_SESSION, "pay-1")
"""The sessions of the world: a stranger's event must never land in one of them."""
SAMPLES = next(
    (p for p in (REPO.parent / "shared" / "samples" / "emails", Path("/work/shared/samples/emails")) if p.is_dir()),
    Path("/work/shared/samples/emails"),
)
"""The public mail samples (malformed MIME among them), read in place: ``../shared`` beside the clone."""
RESET_AFTER = 25
"""Accepted (writing) events before the world is rebuilt, so snapshots stay small and parks current."""


def signed_workflow(folder: Path) -> Path:
    """support-inbox plus ``payment_event``, a trigger taking signed webhooks (``signature:``)."""
    workflow = folder / "support-inbox"
    shutil.copytree(SUPPORT_INBOX, workflow)
    spec = yaml.safe_load((workflow / "workflow.yaml").read_text())
    spec["states"]["intake"]["triggers"]["payment_event"] = {
        "session": "conversation_id",
        "description": "A payment provider's signed webhook.",
        "signature": {"secret": "ssm:/archmax/payments-webhook", "tolerance_s": 300},
    }
    (workflow / "workflow.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return workflow


class Dispatched:
    """A dispatcher that records what it was asked to send (a non-stream event must send nothing)."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def dispatch(self, record: Any, **kwargs: Any) -> None:
        self.calls.append((record, kwargs))


class World:
    """One deployment on moto with three live sessions, rebuilt after :data:`RESET_AFTER` accepted events.

    ``AAQk-1`` parked (an IAM-authorised message), ``mail:<first id>`` parked (Dana's first mail, Dana a
    participant), ``pay-1`` parked (a signed webhook, its request kept for replays).
    """

    def __init__(self, workflow: Path) -> None:
        self.workflow = workflow
        self.ses_serial = 0
        self.build()

    def build(self) -> None:
        env = fresh_aws()
        self.clock = FakeClock("2025-01-01T00:00:00.000Z")
        d = Deployment(env, self.clock, [PARK_FOREVER] * 2000, workflow=self.workflow)
        d.collaborators.read_secret = lambda reference: SECRET
        d.collaborators.reply_secret = lambda: REPLY_SECRET
        assert d.call("send", event("apigw_send_message.json"))["statusCode"] == 202
        d.put_object(f"inbound/{SES_ID}", FIRST_EML)
        assert d.call("send", event("ses_inbound.json"))["records"][0]["session_id"] == MAIL_SESSION
        self.pay_headers = webhook_headers(PAY_BODY, sign_id=False)
        assert d.call("send", webhook("payment_event", PAY_BODY, self.pay_headers))["statusCode"] == 202
        self.dispatched = Dispatched()
        self.outbound = outbound.build(d.store, self.dispatched)
        self.d = d
        self.accepted = 0
        self._snapshot: Any = None

    def snapshot(self) -> Any:
        """``Deployment.snapshot``, kept from the last event's "after" while nothing else wrote."""
        if self._snapshot is None:
            self._snapshot = self.d.snapshot()
        return self._snapshot

    def put_object(self, key: str, data: bytes) -> None:
        """Put a mail where the receipt rule's S3 action would (the next snapshot is taken afresh)."""
        self._snapshot = None
        self.d.put_object(key, data)

    def park_id(self, session_id: str) -> str | None:
        record = self.d.store.load(session_id)
        return record.park_id if record is not None else None

    def ses_id(self) -> str:
        self.ses_serial += 1
        return f"fuzz{self.ses_serial:08d}example"

    def wrote(self) -> None:
        self.accepted += 1
        if self.accepted >= RESET_AFTER:
            self.build()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    moto_env().server()
    folder = Path(tempfile.mkdtemp(prefix="archmax-fuzz-"))
    try:
        yield World(signed_workflow(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- what an answer may be, and what it may write


@dataclass
class Forged:
    """One forged event, where it goes, and what the rules let it do."""

    entry: str
    """``handler:kind`` (``send:http``, ``deliver:direct``, ...): the counts' key; the handler is before ``:``."""
    event: Any
    may_write: bool = False
    """Whether a 2xx for it may change anything (the event is acceptable under the rules)."""
    read_only: bool = False
    """A read: it writes nothing whatever it answers."""
    stranger: bool = False
    """Mail from someone who is no participant and holds no valid token: it never lands in an existing session."""

    @property
    def handler(self) -> str:
        return self.entry.split(":", 1)[0]


def _is_quarantine_key(key: str) -> bool:
    name = key.rsplit("/", 1)[-1]
    return "/quarantine/" in key and (name.endswith(".eml") or (name.endswith(".json") and ".released" not in name))


def _without_hint(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in item.items() if k != "quarantine_hint"} for item in items), key=repr)


def only_quarantine_written(before: Any, after: Any) -> None:
    """Every change is a held mail: new ``quarantine/`` objects, and ``quarantine_hint`` on session items."""
    (tables_before, objects_before), (tables_after, objects_after) = before, after
    for table, items in tables_before.items():
        assert _without_hint(tables_after[table]) == _without_hint(items), f"{table} changed beyond the hint"
    gone = set(objects_before) - set(objects_after)
    added = set(objects_after) - set(objects_before)
    assert not gone, f"a quarantine removed or rewrote {sorted(gone)}"
    assert all(_is_quarantine_key(key) for key, _ in added), f"written outside quarantine/: {sorted(added)}"


def _http_answers(answer: dict[str, Any]) -> tuple[list[str], str]:
    """``([status], kind)``; kind is ``refused`` (an error body) or ``accepted``."""
    status = answer["statusCode"]
    assert isinstance(status, int) and status < 500, f"a {status}: {answer.get('body')!r:.500}"
    if status >= 400:
        payload = json.loads(answer["body"])
        assert payload.get("error") and payload.get("message"), f"a {status} that names no problem: {payload}"
        return [str(status)], "refused"
    headers = {**(answer.get("headers") or {}), **(answer.get("multiValueHeaders") or {})}
    content_type = str({k.lower(): v for k, v in headers.items()}.get("content-type", ""))
    if "json" in content_type:
        payload = json.loads(answer["body"])
        if isinstance(payload, dict) and payload.get("error"):  # 200 DuplicateDeliveryError: refused, not applied
            return [f"{status} {payload['error']}"], "refused"
    return [str(status)], "accepted"


def _ses_answers(answer: dict[str, Any]) -> tuple[list[str], str, list[str]]:
    """``(per-record statuses, kind, session ids accepted)``: the worst record decides the kind."""
    names, kinds, sessions = [], set(), []
    for record in answer["records"]:
        if "refused" in record:
            names.append("ses:refused")
        elif "error" in record:
            assert record.get("message"), record
            names.append("ses:error")
        elif "quarantined" in record:
            names.append("ses:quarantined")
            kinds.add("quarantined")
        else:
            names.append("ses:accepted")
            kinds.add("accepted")
            sessions.append(record["session_id"])
    kind = "accepted" if "accepted" in kinds else "quarantined" if kinds else "refused"
    return names, kind, sessions


def answered(forged: Forged, answer: Any) -> tuple[list[str], str, list[str]]:
    """What an answer says: ``(statuses to count, refused|quarantined|accepted, sessions an SES mail reached)``."""
    assert isinstance(answer, dict), f"not a JSON object: {answer!r:.300}"
    if "statusCode" in answer:
        names, kind = _http_answers(answer)
        return names, kind, []
    if answer.get("ok") is False:
        status = answer.get("status")
        assert isinstance(status, int) and 400 <= status < 500, f"a typed refusal with status {status}: {answer}"
        assert answer.get("error") and answer.get("message"), answer
        return [f"ok:false {status}"], "refused", []
    assert answer.get("ok") is True or "batchItemFailures" in answer, f"neither answered nor refused: {answer}"
    if "records" in answer:
        return _ses_answers(answer)
    return ["ok"], "accepted", []


def send_forged(world: World, forged: Forged) -> None:
    """Send one forged event and hold its answer and its writes to the rules (module docstring)."""
    d = world.d
    before = world.snapshot()
    try:
        if forged.handler == "outbound":
            answer = world.outbound(forged.event, d.context)
        else:
            answer = d.call(forged.handler, forged.event)
    except Exception as exc:  # an unhandled exception is what Lambda reports as a failed (5xx) invoke
        fuzz_counts.count(forged.entry, ["raised"])
        raise AssertionError(f"{forged.entry}: unhandled {type(exc).__name__}: {exc}\nevent: {forged.event!r:.2000}")
    after = world._snapshot = d.snapshot()
    try:
        names, kind, sessions = answered(forged, answer)
    except AssertionError:
        fuzz_counts.count(forged.entry, ["bad answer"])
        raise
    fuzz_counts.count(forged.entry, names)
    where = f"{forged.entry}: answer {answer!r:.600}\nevent: {forged.event!r:.2000}"
    if forged.read_only or kind == "refused":
        assert after == before, f"wrote on a refusal or a read; {where}"
    elif kind == "quarantined":
        only_quarantine_written(before, after)
    elif after != before:
        assert forged.may_write, f"a forged event was accepted and wrote; {where}"
        reached = [s for s in sessions if s in EXISTING]
        assert not (forged.stranger and reached), f"a stranger's mail reached {reached}; {where}"
    if forged.handler == "outbound":
        assert not world.dispatched.calls, f"a non-stream event dispatched; {where}"
    if after != before:
        world.wrote()


# ---------------------------------------------------------------- hostile values

HOSTILE_IDS = [
    "..", "../etc/passwd", "AAQk-1/..", "../AAQk-1", "a\\..\\b", "_specs", "_specs/x", "x\x00y", "x\ny", " ", "\t",
    "", "A" * 600, "AAQk-1/child-1", "AAQk-1/child-1/grand", "AAQk-1/", "/AAQk-1", "\u202eevil", "ünïcødé-1",
    "mail:" + FIRST_ID, "pay-1", "AAQk-1", "%2e%2e", "%ZZ", "%00", "x%2Fy", "AAQk-1%2F..", "\ud800", "😀" * 70,
    "con", "nul", ".", "a/./b", "x" * 255, "sessions/AAQk-1", "quarantine",
]  # fmt: skip
ids = st.one_of(st.sampled_from(HOSTILE_IDS), st.text(max_size=24))
TRIGGERS = ["email_reply", "email_replly", "Email_Reply", "email_received", "payment_event", "timer", "", " ",
            "../x", "a" * 500, "trigger\x00", "émail_reply", "email-reply"]  # fmt: skip
triggers = st.one_of(st.sampled_from(TRIGGERS), st.text(max_size=16))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
NOT_JSON = ["", "{", "null", "[]", "[1, 2]", '"text"', "5", "{'single': 'quotes'}", "{\"a\": NaN}",
            '{"trigger": "email_reply"', "\x00", "[" * 5000 + "]" * 5000, '{"message": "\\ud800"}',
            '{"a": 1, "a": 2}', "\ufeff{}"]  # fmt: skip


def _valid_id(session_id: str) -> bool:
    try:
        validate_session_id(session_id)
    except InvalidSessionIdError:
        return False
    return True


def routed_id_is_valid(segment: str) -> bool:
    """Whether the id a route sees for this raw path segment (percent-decoded once) passes §4.1."""
    return _valid_id(unquote(segment))


def path_id(draw: Any, session_id: str) -> str:
    """The id as it sits in a raw path: percent-encoded (as a client sends it) or raw."""
    return quote(session_id.encode("utf-8", "surrogatepass"), safe="") if draw(st.booleans()) else session_id


@st.composite
def bodies(draw: Any, good: dict[str, Any]) -> tuple[str, bool]:
    """``(raw body, still a usable object)``: the good body, mutated."""
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return draw(st.sampled_from(NOT_JSON)), False
    if choice == 1:
        return json.dumps(draw(json_values)), False
    if choice == 2:  # a field of the wrong type
        key = draw(st.sampled_from(sorted(good)))
        return json.dumps({**good, key: draw(json_values)}), False
    if choice == 3:  # an extra key
        return json.dumps({**good, draw(st.text(min_size=1, max_size=10)): draw(json_values)}), False
    if choice == 4:  # huge: one that fits a firing is fine (an IAM caller), one that does not is a 413
        return json.dumps({**good, "message": "x" * draw(st.sampled_from([70_000, 300_000, 450_000, 2_000_000]))}), True
    return json.dumps({**good, "message": draw(st.text(min_size=1, max_size=60))}), True


def http_event(name: str, path: str, raw: str, *, b64: bool = False, headers: dict[str, Any] | None = None) -> Any:
    evt = event(name)
    evt["rawPath"] = evt["requestContext"]["http"]["path"] = path
    evt["body"] = base64.b64encode(raw.encode("utf-8", "surrogatepass")).decode() if b64 else raw
    evt["isBase64Encoded"] = b64
    if headers is not None:
        evt["headers"] = headers
    return evt


@st.composite
def envelope_junk(draw: Any, evt: dict[str, Any]) -> dict[str, Any]:
    """The event with one envelope field replaced by junk (or left as it is)."""
    field_ = draw(st.sampled_from([None, "headers", "isBase64Encoded", "body", "rawQueryString", "cookies"]))
    if field_ is not None:
        evt[field_] = draw(json_values)
    return evt


# ---------------------------------------------------------------- send: POST /sessions/{id}/messages


@FUZZ
@given(data=st.data())
def test_forged_messages_to_the_send_function(world: World, data: Any) -> None:
    segment = path_id(data.draw, data.draw(ids))
    raw, usable = data.draw(bodies({"message": "About my order", "trigger": "email_received"}))
    headers = {"content-type": "application/json", "idempotency-key": data.draw(st.one_of(st.text(max_size=30), st.sampled_from(["../k", "k" * 3000, "\x00"])))}  # fmt: skip
    evt = http_event("apigw_send_message.json", f"/sessions/{segment}/messages", raw,
                     b64=data.draw(st.booleans()), headers=headers)  # fmt: skip
    evt = data.draw(envelope_junk(evt))
    send_forged(world, Forged("send:http", evt, may_write=usable and routed_id_is_valid(segment)))


# ---------------------------------------------------------------- send: signed webhooks


def webhook(trigger: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """``POST /webhooks/{trigger}`` (HTTP API v2) from the internet, no IAM."""
    evt = event("apigw_send_message.json")
    evt["routeKey"] = evt["requestContext"]["routeKey"] = "POST /webhooks/{trigger}"
    evt["rawPath"] = evt["requestContext"]["http"]["path"] = f"/webhooks/{trigger}"
    evt["requestContext"].pop("authorizer", None)
    evt["headers"] = {"content-type": "application/json", **{k.lower(): v for k, v in headers.items()}}
    evt["body"] = body.decode("utf-8", "surrogatepass")
    evt["isBase64Encoded"] = False
    return evt


def webhook_headers(body: bytes, *, ts: int = NOW, delivery: str = "evt_1", secret: bytes = SECRET,
                    sign_id: bool = True) -> dict[str, str]:  # fmt: skip
    return {
        "X-Archmax-Timestamp": str(ts),
        "X-Archmax-Signature": signature_for(secret, str(ts), body, delivery if sign_id else None),
        "X-Archmax-Delivery": delivery,
    }


@st.composite
def forged_webhooks(draw: Any, world: World) -> dict[str, Any]:
    body = json.dumps({"conversation_id": draw(st.sampled_from(["pay-1", "pay-2", "AAQk-1"])),
                       "message": draw(st.text(min_size=1, max_size=40))}).encode()  # fmt: skip
    trigger = "payment_event"
    attack = draw(st.sampled_from(["missing", "wrong-secret", "stale", "bad-ts", "tampered", "replay",
                                   "other-trigger", "junk-signature", "swapped-id"]))  # fmt: skip
    headers = webhook_headers(
        body, delivery=draw(st.sampled_from(["evt_9", "evt_1", "x"])), sign_id=draw(st.booleans())
    )
    if attack == "missing":
        for name in draw(st.lists(st.sampled_from(list(headers)), min_size=1, unique=True)):
            headers.pop(name)
        if "X-Archmax-Signature" in headers and "X-Archmax-Timestamp" in headers:
            headers.pop("X-Archmax-Signature")
    elif attack == "wrong-secret":
        headers = webhook_headers(body, secret=draw(st.binary(min_size=1, max_size=40).filter(lambda s: s != SECRET)))
    elif attack == "stale":
        skew = draw(st.integers(301, 10**9)) * draw(st.sampled_from([1, -1]))
        headers = webhook_headers(body, ts=max(0, NOW + skew))
    elif attack == "bad-ts":
        headers["X-Archmax-Timestamp"] = draw(
            st.sampled_from(["", "-1", "1e9", "0x10", "１７３５６８９６００", " ", "9" * 40])
        )
    elif attack == "tampered":
        body = body.replace(b"pay", b"PAY") + draw(st.sampled_from([b" ", b"\n", b"{}"]))
    elif attack == "replay":  # the captured request, re-sent under a new delivery id
        body, headers = PAY_BODY, dict(world.pay_headers)
        headers[draw(st.sampled_from(["X-Archmax-Delivery", "Idempotency-Key"]))] = draw(st.text(max_size=20))
    elif attack == "other-trigger":
        trigger = draw(st.sampled_from(["email_received", "email_reply", "nope", "payment_even", "..", "%2e%2e"]))
    elif attack == "junk-signature":
        headers["X-Archmax-Signature"] = draw(
            st.one_of(st.text(max_size=80), st.sampled_from(["sha256=", ",,,", "sha256=" + "0" * 64]))
        )
    else:  # a signed id swapped for another
        headers = webhook_headers(body, delivery="evt_7")
        headers["X-Archmax-Delivery"] = draw(st.sampled_from(["evt_8", "evt_7-replay", "evt.7"]))
    return webhook(trigger, body, headers)


@FUZZ
@given(data=st.data())
def test_forged_signed_webhooks_are_refused(world: World, data: Any) -> None:
    send_forged(world, Forged("send:webhook", data.draw(forged_webhooks(world))))


# ---------------------------------------------------------------- deliver: POST /sessions/{id}/deliveries and direct


@st.composite
def forged_deliveries(draw: Any, world: World) -> Forged:
    """A delivery to a parked session with one thing wrong (or nothing: then it may apply)."""
    session_id = draw(st.one_of(st.sampled_from(["AAQk-1", "pay-1", MAIL_SESSION]), ids))
    current = world.park_id(session_id) if _valid_id(session_id) else None
    good: dict[str, Any] = {"trigger": "email_reply", "message": "It's ORD-1001."}
    park = draw(st.sampled_from(["none", "current", "stale", "junk"]))
    if park == "current" and current is not None:
        good["park_id"] = current
    elif park == "stale":
        good["park_id"] = f"{session_id}@v1" if current != f"{session_id}@v1" else f"{session_id}@v99999"
    elif park == "junk":
        good["park_id"] = draw(json_values)
    trigger = draw(st.one_of(st.just("email_reply"), triggers))
    good["trigger"] = trigger
    near_miss = world.d.agent.spec.near_miss_trigger(trigger) is not None  # a typo: 400 (issue 25 item 4)
    unnamed = park == "none" or good.get("park_id", "") is None  # naming no park keeps today's behaviour (§5.11)
    usable = (unnamed or park == "current") and not near_miss and _valid_id(session_id)
    direct = draw(st.booleans())
    if direct:
        payload: Any = {**event("deliver_direct.json"), **good, "session_id": session_id}
        payload.pop("delivery_id")
        mutation = draw(st.sampled_from(["none", "type", "extra", "drop"]))
        if mutation == "type":
            payload[draw(st.sampled_from(sorted(payload)))] = draw(json_values)
        elif mutation == "extra":
            payload[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
        elif mutation == "drop":
            payload.pop(draw(st.sampled_from(sorted(payload))))
        # judged on what is sent: a replaced value may still be valid (None for an optional field), a
        # dropped park id names no park; an unknown key, a stale park id or a near-miss trigger never is
        trigger_sent = payload.get("trigger")
        misspelt = isinstance(trigger_sent, str) and world.d.agent.spec.near_miss_trigger(trigger_sent) is not None
        fits = payload.get("park_id") in (None, current) and not misspelt and mutation != "extra"
        return Forged("deliver:direct", payload, may_write=fits)
    raw, ok = draw(bodies(good))
    if draw(st.booleans()):
        raw, ok = json.dumps(good), True
    segment = path_id(draw, session_id)
    evt = http_event("apigw_deliver.json", f"/sessions/{segment}/deliveries", raw)
    if draw(st.booleans()):  # a fresh delivery id, so the delivery is not answered as the file's duplicate
        evt["headers"]["idempotency-key"] = f"fuzz-{world.ses_id()}"
    usable = usable or (unnamed and not near_miss and routed_id_is_valid(segment))  # a decoded id may be valid
    return Forged("deliver:http", draw(envelope_junk(evt)), may_write=usable and ok)


@FUZZ
@given(data=st.data())
def test_forged_deliveries(world: World, data: Any) -> None:
    send_forged(world, data.draw(forged_deliveries(world)))


@st.composite
def forged_decisions(draw: Any, world: World) -> Forged:
    """Decisions (no session of the world is parked at a human state), quarantine reads and releases."""
    session_id = draw(st.one_of(st.sampled_from(["AAQk-1", MAIL_SESSION, "refund-7"]), ids))
    sid = path_id(draw, session_id)
    route = draw(st.sampled_from(["decision", "release", "quarantine"]))
    if route == "decision":
        good = {"to": draw(st.sampled_from(["approved", "answer", "clarify", ""])), "comment": "ok",
                "park_id": draw(st.one_of(st.none(), st.text(max_size=12)))}  # fmt: skip
        raw, _ = draw(bodies(good))
        return Forged("deliver:decision", http_event("apigw_decision.json", f"/sessions/{sid}/decisions", raw))
    if route == "release":
        mail = quote(
            draw(st.one_of(st.sampled_from(["../x", SES_ID, "a.released", ".."]), st.text(max_size=20))), safe=""
        )
        return Forged(
            "deliver:release", http_event("apigw_decision.json", f"/sessions/{sid}/quarantine/{mail}/release", "{}")
        )
    evt = http_event("apigw_get_session.json", f"/sessions/{sid}/quarantine", "")
    evt["requestContext"]["http"]["method"] = "GET"
    return Forged("deliver:quarantine", evt, read_only=True)


@FUZZ
@given(data=st.data())
def test_forged_decisions_and_releases(world: World, data: Any) -> None:
    send_forged(world, data.draw(forged_decisions(world)))


# ---------------------------------------------------------------- resolve: reads only


@st.composite
def forged_reads(draw: Any) -> Forged:
    session_id = path_id(draw, draw(st.one_of(st.sampled_from(list(EXISTING)), ids)))
    kind = draw(st.sampled_from(["get", "view", "transcript", "trail", "list", "resolve", "direct"]))
    if kind == "direct":
        payload = draw(st.one_of(json_values, st.fixed_dictionaries(
            {"action": st.sampled_from(["get", "resolve", "delete", 1])},
            optional={"session_id": ids, "trigger": triggers, "variables": json_values, "session_path": st.text(max_size=20)},
        )))  # fmt: skip
        return Forged("resolve:direct", payload, read_only=True)
    if kind == "resolve":
        good = {"trigger": "email_received", "variables": {"conversation_id": "AAQk-1"}}
        raw, _ = draw(bodies(good))
        return Forged("resolve:http", http_event("apigw_resolve.json", "/resolve", raw), read_only=True)
    path = "/sessions" if kind == "list" else f"/sessions/{session_id}" + ("" if kind == "get" else f"/{kind}")
    evt = http_event("apigw_get_session.json", path, "")
    query = draw(st.dictionaries(st.sampled_from(["status", "limit", "after", "parked_before", "workflow", "delivery_id", "x"]),
                                 st.text(max_size=12), max_size=3))  # fmt: skip
    evt["rawQueryString"] = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in query.items())
    evt["queryStringParameters"] = query or None
    return Forged("resolve:http", draw(envelope_junk(evt)), read_only=True)


@FUZZ
@given(data=st.data())
def test_forged_reads_write_nothing(world: World, data: Any) -> None:
    send_forged(world, data.draw(forged_reads()))


# ---------------------------------------------------------------- SES inbound


def mail_bytes(*, sender: str, message_id: str, to: str = "support@example.com", in_reply_to: str | None = None,
               text: str = "Refund it to my IBAN DE00 1234.") -> bytes:  # fmt: skip
    thread = f"In-Reply-To: <{in_reply_to}>\r\nReferences: <{in_reply_to}>\r\n" if in_reply_to else ""
    return (
        f"From: {sender}\r\nTo: {to}\r\nSubject: Re: your order\r\nMessage-ID: <{message_id}>\r\n{thread}"
        f"Date: Tue, 14 Jan 2025 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
    ).encode("utf-8", "surrogateescape")


MAIL_KINDS = ("verdicts", "stranger-known-id", "stranger-reply", "forged-token", "missing-object", "envelope")
VERDICTS = st.one_of(st.sampled_from(["PASS", "FAIL", "GRAY", "PROCESSING_FAILED", "pass", "fail", ""]), json_values)


def tampered(token: str) -> str:
    """The token with its last character changed (never the token itself)."""
    return token[:-1] + ("b" if token.endswith("a") else "a")


def _verdict_passes(value: Any) -> bool:
    return isinstance(value, str) and value.upper() == "PASS"


def _samples() -> list[Path]:
    return sorted(SAMPLES.iterdir()) if SAMPLES.is_dir() else []


@st.composite
def forged_mail(draw: Any, world: World, sample: Path | None = None) -> Forged:
    """One SES receipt: forged verdicts, a stranger, a borrowed Message-ID, a forged token, no object, odd MIME."""
    ses_id = world.ses_id()
    evt = event("ses_inbound.json")
    record = evt["Records"][0]["ses"]
    record["mail"]["messageId"] = ses_id
    receipt = record["receipt"]
    kind = sample.name if sample is not None else draw(st.sampled_from(MAIL_KINDS))
    said = draw(st.text(max_size=40))  # a kind with few variants is otherwise exhausted early (never repeated)
    dana, mallory = "Dana Rivers <dana.rivers@example.org>", "Mallory <mallory@evil.example>"
    fresh = f"fz-{ses_id}@example.org"
    may_write, raw = True, None
    if kind == "verdicts":  # Dana's reply (a participant), its verdicts forged
        dmarc = draw(VERDICTS)
        for name, value in (("spfVerdict", draw(VERDICTS)), ("dkimVerdict", draw(VERDICTS)), ("dmarcVerdict", dmarc)):
            receipt[name] = {"status": value} if draw(st.booleans()) else value
        raw = mail_bytes(sender=dana, message_id=fresh, in_reply_to=FIRST_ID, text="It's ORD-1001.")
        may_write = _verdict_passes(
            receipt["dmarcVerdict"].get("status") if isinstance(receipt["dmarcVerdict"], dict) else None
        )
    elif kind == "stranger-known-id":  # Mallory re-sends the thread's first Message-ID
        raw = mail_bytes(
            sender=mallory, message_id=FIRST_ID, in_reply_to=draw(st.sampled_from([None, FIRST_ID])), text=said
        )
        may_write = False
    elif kind == "stranger-reply":
        raw = mail_bytes(sender=draw(st.sampled_from([mallory, "dana.rivers@example.org.evil.example", "DANA <dana@rivers.example>"])),
                         message_id=fresh, in_reply_to=FIRST_ID, text=said)  # fmt: skip
        may_write = False
    elif kind == "forged-token":
        target = draw(st.sampled_from(list(EXISTING)))
        token = draw(st.sampled_from([
            sign_token(target, b"not-the-reply-secret-000000"), tampered(sign_token(target, REPLY_SECRET)),
            sign_token(target, REPLY_SECRET)[:20], "aaaa-" + "a" * 26, sign_token("AAQk-2", REPLY_SECRET)[:-3] + "zzz",
        ]))  # fmt: skip
        address = f"support+{token}@example.com"
        receipt["recipients"] = [address]
        raw = mail_bytes(
            sender=mallory, message_id=fresh, to=address, in_reply_to=draw(st.sampled_from([None, FIRST_ID])), text=said
        )
        may_write = True  # a token that names no session opens Mallory's own conversation; never an existing one
    elif kind == "missing-object":  # where SES says it wrote the mail, nothing is
        if draw(st.booleans()):
            receipt["action"] = {"type": "S3", "bucketName": world.d.env.bucket, "objectKey": f"inbound/x{ses_id}"}
        receipt["recipients"] = [draw(st.sampled_from(["support@example.com", said]))]
        may_write = False
    elif sample is not None:  # a real-world mail, as SES would store it (read in place)
        kind = "sample"
        raw = sample.read_bytes()
        if draw(st.booleans()):  # truncated mid-header or mid-body
            raw = raw[: draw(st.integers(0, len(raw)))]
        for name in ("spfVerdict", "dkimVerdict", "dmarcVerdict"):
            receipt[name] = {"status": draw(VERDICTS)}
    else:  # the envelope itself forged
        raw = mail_bytes(sender=mallory, message_id=fresh, in_reply_to=FIRST_ID)
        where = draw(
            st.sampled_from(
                ["recipients", "action", "spamVerdict", "virusVerdict", "messageId", "mail", "receipt", "Records"]
            )
        )
        junk = draw(json_values)
        if where == "messageId":
            record["mail"]["messageId"] = draw(
                st.one_of(st.sampled_from(["../x", "a/b", "", "." * 3, "x" * 300]), json_values)
            )
        elif where in ("mail", "receipt"):
            record[where] = junk
        elif where == "Records":
            evt["Records"].append(junk)
        else:
            receipt[where] = junk
        may_write = False
    if raw is not None:
        world.put_object(f"inbound/{ses_id}", raw)
    stranger = kind in ("stranger-known-id", "stranger-reply", "forged-token", "envelope")
    return Forged(f"send:ses-{kind}", evt, may_write=may_write, stranger=stranger)


@FUZZ
@given(data=st.data())
def test_forged_mail_to_the_send_function(world: World, data: Any) -> None:
    send_forged(world, data.draw(forged_mail(world)))


@FUZZ
@given(data=st.data())
def test_malformed_mime_from_the_shared_samples(world: World, data: Any) -> None:
    samples = _samples()
    if not samples:
        pytest.skip(f"{SAMPLES} is absent: the public mail samples are read in place there, never copied")
    send_forged(world, data.draw(forged_mail(world, data.draw(st.sampled_from(samples)))))


# ---------------------------------------------------------------- direct invokes and the outbound function


def _near_shapes() -> list[Callable[[], Any]]:
    return [
        lambda: event("scheduled_sweep.json"), lambda: event("scheduler_sweep.json"), lambda: event("send_drain.json"),
        lambda: {"Records": [{"eventSource": "aws:dynamodb", "dynamodb": {}}]}, lambda: event("ses_inbound.json"),
        lambda: {"Records": [{"eventSource": "aws:sqs", "body": "{}"}]}, lambda: {"Records": []},
        lambda: event("apigw_get_session.json"), lambda: event("resolve_direct.json"),
    ]  # fmt: skip


@st.composite
def junk_invokes(draw: Any) -> Forged:
    """Any JSON value, or a real-shaped event of another source with one field replaced, at any function."""
    handler = draw(st.sampled_from(["send", "deliver", "resolve", "timer"]))
    if draw(st.booleans()):
        payload = draw(json_values)
    else:
        payload = draw(st.sampled_from(_near_shapes()))()
        key = draw(st.sampled_from(sorted(payload))) if payload else None
        if key is not None:
            payload[key] = draw(st.one_of(json_values, ids))
    if isinstance(payload, dict) and set(payload) == {"drain"}:
        return Forged(f"{handler}:drain", payload, may_write=True)  # draining a real inbox is what it is for
    # a schedule sweeps what is due; a receipt (SES-shaped) is the baseline mail again: both may write
    may_write = handler == "timer" or (handler == "send" and is_ses_event(payload))
    return Forged(f"{handler}:direct", payload, read_only=handler == "resolve", may_write=may_write)


@FUZZ
@given(data=st.data())
def test_junk_direct_invokes_get_typed_refusals(world: World, data: Any) -> None:
    send_forged(world, data.draw(junk_invokes()))


@st.composite
def not_stream_batches(draw: Any) -> Any:
    shape = draw(st.sampled_from(["junk", "other-source", "mixed", "near"]))
    if shape == "junk":
        return draw(json_values)
    record = {
        "eventSource": "aws:dynamodb",
        "dynamodb": {"Keys": {"pk": {"S": "AAQk-1"}}, "NewImage": {"version": {"N": "2"}}},
    }
    if shape == "other-source":
        return {
            "Records": [
                {
                    **record,
                    "eventSource": draw(
                        st.one_of(st.sampled_from(["aws:ses", "aws:sqs", "aws:kinesis"]), st.text(max_size=10))
                    ),
                }
            ]
        }
    if shape == "mixed":
        return {"Records": [record, draw(json_values)]}
    return draw(st.sampled_from(_near_shapes()))()


@FUZZ
@given(data=st.data())
def test_non_stream_events_to_the_outbound_function_send_nothing(world: World, data: Any) -> None:
    payload = data.draw(not_stream_batches())
    from archmax.handlers.outbound import is_stream_batch

    if is_stream_batch(payload):  # a real stream record: not what this test forges
        return
    send_forged(world, Forged("outbound:direct", payload))
