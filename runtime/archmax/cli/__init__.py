"""The ``archmax`` command line: ``main`` parses and dispatches (:mod:`archmax.cli.main`).

One module per command (``run``, ``deliver``, ``decide``, ``reply``, ``sessions``, ``validate``,
``test``, ``sweep``, ``email``, ``schema``, ``serve``, ``invoke``, ``quarantine``), each with
``add_parser(add)`` and ``run(cli)``; shared pieces of their own: :mod:`.context` (one invocation:
root, store, model, output), :mod:`.flags`, :mod:`.workspace` (what the arguments name),
:mod:`.render` (how results print), :mod:`.errors` (errors to exit codes), :mod:`.hints`
(``next:`` lines after an error).

Rule source: BEHAVIOUR.md §11.
"""

from archmax.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
