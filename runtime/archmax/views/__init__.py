"""Views of a session derived from its checkpoint: the story, ``--log`` text, the HTML page.

Rule source: BEHAVIOUR.md §9.5 (artifacts are views of the checkpoint, which stays the one
record) and issue 15. Nothing here writes to a store.
"""

from archmax.views.story import ConversationEntry, Story, TimelineEntry, story_of
from archmax.views.text import log_lines

__all__ = ["ConversationEntry", "Story", "TimelineEntry", "log_lines", "story_of"]
