"""The hand-written part of ``docs/workflow.md``: what a workflow author needs beside the keys.

Rule source: issue 25 item 9 (how to write ``tools.py``, the ``until`` grammar, that the ``timer``
trigger needs no declaration, the scripted model file's shape). :mod:`archmax.spec.reference`
puts this text after its introduction; ``tests/unit/spec/test_guide.py`` checks that every
``until`` form it names is accepted or refused as it says (:mod:`archmax.session.until`), that the
``tools.py`` example loads and that the model file example is a valid script.
"""

from __future__ import annotations

GUIDE = """\
## Host tools: `tools.py`

A workflow's own tools live in `workflows/<slug>/tools.py`, beside `workflow.yaml`. The file
defines `TOOLS`, a list of plain functions (or `archmax.HostTool` objects). The CLI, `archmax
serve`, `archmax invoke` and the Lambda functions all load it the same way
(`archmax.workflow_tools.load_tools`), and a state still has to grant a tool (`tools.allow`, or
the root `tools.allow_always`) before the model is offered it:

```python
\"\"\"Host tools for the order-lookup workflow.\"\"\"

import json
from pathlib import Path


def lookup_order(order_id: str) -> dict:
    \"\"\"Look an order up by its id (e.g. ORD-1001): {"found": true, "order": {...}} or {"found": false}.\"\"\"
    orders = json.loads(Path(__file__).with_name("orders.json").read_text(encoding="utf-8"))
    for order in orders["orders"]:
        if order["id"] == order_id:
            return {"found": True, "order": order}
    return {"found": False, "order_id": order_id}


TOOLS = [lookup_order]
```

- The function's **name** is the tool's name (it may not start with `archmax_`), its **docstring**
  is the description the model reads, and its **parameters** become the JSON Schema of the
  arguments: `str`, `int`, `float`, `bool`, `list` and `dict` annotations give the JSON type, any
  other annotation accepts any value, and a parameter without a default is required.
- The model's arguments arrive as keyword arguments, after `${{variable}}` references in them were
  replaced by the session's variables and after any guard (`{tool, args: {...}}`) checked them.
- A returned `str` is the result as it is; anything else is sent as JSON (`json.dumps`, with
  `str()` for what JSON cannot hold). An exception is an `error` result the model reads
  (`<tool> failed: <Type>: <message>`), not a failed turn.
- The module is imported from its file (its folder is not put on `sys.path`): import only the
  standard library and installed packages (on Lambda: boto3 and the layer's packages), and find
  data files next to it with `Path(__file__)`.
- For a full schema or another name, list `archmax.HostTool(name, fn, description, parameters)`
  in `TOOLS` instead of the function.
- `archmax validate <slug>` names every granted tool that no `TOOLS` entry provides (a host refuses
  to start with one), and a `tools.py` that cannot be imported or defines no `TOOLS` list.

## Waiting for a time: `until`

`archmax_wait({reason, until?})` parks the session; `until` records when it should be woken
(`resume_at`, an instant in UTC, shown by `archmax sessions`). Surrounding spaces are trimmed.
`until` is one of:

| form | grammar | examples |
| --- | --- | --- |
| duration | `<whole number><unit>`, one unit of `ms`, `s`, `m`, `h`, `d`, lowercase, no spaces | `30m`, `120s`, `2h`, `1d`, `500ms` |
| instant | `YYYY-MM-DD`, optionally `T` or one space and `HH:MM[:SS[.fraction]]`, optionally `Z`, `±HH:MM` or `±HHMM` | `2025-03-01`, `2025-03-01T09:00`, `2025-03-01 09:00+02:00` |

A duration counts from the moment of the call (`1d` is 24 hours) and must be more than zero (`0m`:
`must be a positive duration`). A date alone is midnight UTC, a time without an offset is UTC,
fractions of a second are cut to milliseconds, and an instant in the past is due at once. The
grammar is BEHAVIOUR.md §5.3's, exactly: anything else is refused, and the model is told why
together with the forms above: `1.5h`, `2 h`, `2H`, `2h30m` (write `150m`), `1w` (write `7d`),
`PT2M` (ISO-8601 durations: write `2m`), `tomorrow`. A refused `until` parks nothing: the model gets an `error`
result and may call `archmax_wait` again.

## Timers: the `timer` trigger needs no declaration

Nothing is scheduled when a session parks with `until`: `archmax sweep` (and the stack's
one-minute schedule) finds the parks whose `resume_at` has passed and delivers the trigger `timer`
into each, with the variable `now` (the sweep's instant). A delivery into a park is never matched
against the declared triggers, so `timer` needs no entry under `triggers:`; the session continues
in the state it parked in, where the instructions say what to do when the timer fires ("if the
payment has not posted, wait another day"). To wake a park by hand before it is due:
`archmax deliver <id> --trigger timer`.

## Deadlines: `timeout`

A wait can end even when nobody answers (BEHAVIOUR.md §5.11). `archmax_wait({reason, timeout: 3d})`
and a human state's `timeout: 3d` take a duration of the `until` grammar (duration forms only: an
instant is not a timeout), counted from the park. When it passes with nothing delivered, the sweep
fires the trigger `timeout` into the park:

- at a wait, the state continues with an `[event]` note naming `timeout` (variables `now` and
  `timeout`), like any delivery;
- at a human state, the transition marked `on_timeout: true` is taken (at most one per state, to
  another state, and only with the state's `timeout`); without one the turn fails (`on_error`
  routes it, else the session is rejected) with `wait timed out after 3d`.

```yaml
review:
  type: human
  timeout: 3d
  transitions:
    - {to: approved, description: The refund is approved.}
    - {to: escalated, description: Nobody decided in three days., on_timeout: true}
```

With both `until` and `timeout`, whichever comes first wakes the session, and the trigger says
which (`timer` or `timeout`). A person's answer before the deadline wins; the deadline then fires
nothing. Every sweep reports the oldest open park's age (`OldestParkAge`).

## Scripted models: `model.yaml`

`--model scripted:<file>` (or `ARCHMAX_MODEL=scripted:<file>`, or `model:` in a test case) replays
canned answers instead of calling a model: offline and deterministic, for demos and tests. The
file is a YAML list of entries, or a mapping with the one key `responses` holding that list:

```yaml
responses:
  - expect_state: intake              # optional: the state the session must be in
    call: {archmax_advance: {to: clarify, reason: "no order number"}}
  - say: "Which order is this about?"  # the agent's words...
    call: {archmax_wait: {reason: "the customer's order number", until: 2d}}  # ...and its tool calls
  - call:                             # list form: the same tool twice, in this order
      - lookup_order: {order_id: ORD-1001}
      - lookup_order: {order_id: ORD-1002}
  - say: "ORD-1001 ships tomorrow."
```

- Each entry answers one model call, in order: `say` (text), `call` (tool calls, a mapping
  `{tool: {arguments}}` or a list of one-key mappings) or both; no other key.
- With `expect_state`, the call fails when the session stands in another state
  (`model response <n> expected state '<a>' but the session is in '<b>'`).
- A **handoff call** is one extra model call the runtime makes when a session parks
  (`archmax_wait`, or an advance into a human state) and the agent has written no text since the
  turn opened: the person must be told something, so the model is asked for those words
  (BEHAVIOUR.md §5.2, §5.5). An entry whose `call` parks without a `say` is therefore followed by
  one more entry that answers the handoff (its `say` is the question the person gets); give the
  parking entry a `say` and no handoff call is made.
- Every model call takes an entry, handoff calls and `after`-hook retries included, and so do the
  calls of sub-workflow sessions. When the entries run out the call fails with `model script
  exhausted after <n> responses`; the turn stops part-way and the session stays `running`.
- In the CLI each command is a new process: a session's n-th model call is answered by entry n,
  counted from the answers already in its transcript, so `archmax run` and the `archmax sweep`s
  that wake it walk one script from the top. Give a handoff answer some text in such scripts.
- In a test case (`model:` in a `*.test.yaml`) leftover entries fail the case (`model.unconsumed`).

"""
"""Markdown, ending with one blank line; the reference puts it before ``## workflow.yaml keys``."""
