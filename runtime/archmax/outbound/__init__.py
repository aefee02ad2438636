"""What a session says back: email replies and lifecycle events, recorded in the commit and sent after it.

Rule source: DESIGN.md §3 "The change stream" (the transactional outbox: a commit records its
outbound messages, a dispatcher sends them afterwards, idempotently by outbox id) and issue 12.

* :mod:`archmax.outbound.outbox`: which entries a turn-ending commit records (pure, no I/O);
* :mod:`archmax.outbound.mime`: the threaded reply as raw MIME (standard ``email`` package);
* :mod:`archmax.outbound.transports`: where mail and events go (SMTP, ``.eml`` files, SES, EventBridge);
* :mod:`archmax.outbound.dispatch`: sends each entry once and records the result once;
* :mod:`archmax.outbound.aliases` and :mod:`archmax.outbound.replies`: the ids we sent under, so a reply
  to them finds its session.
"""
