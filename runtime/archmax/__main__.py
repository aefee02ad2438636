"""``python -m archmax``: the same as the ``archmax`` command (BEHAVIOUR.md §11)."""

import sys

from archmax.cli import main

sys.exit(main())
