"""A text field that handles its editing keys in the order they were typed, even when they arrive in a burst."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import Input

#: Input's own editing keys (backspace, delete, arrows, home/end, enter, …) and their actions. Only these: the
#: scroll keys it inherits (up, down) stay free for the containers around it.
EDIT_ACTIONS: dict[str, str] = {b.key: b.action for b in Binding.make_bindings(Input.BINDINGS)}


class OrderedInput(Input):
    """An `Input` whose editing keys run as the key arrives, in order with the characters typed.

    Textual's Input types a printable key the moment it gets it, but reaches its editing keys through the
    bindings, once the key event has bubbled up to the app. When keys arrive together (a fast typist, a busy
    moment, a slow connection), the characters typed after a backspace overtake it: ``512`` + ⌫⌫79 became
    ``517`` or stayed ``512``. Running the field's own editing actions here keeps every key in typing order.
    """

    async def _on_key(self, event: events.Key) -> None:
        action = EDIT_ACTIONS.get(event.key)
        if action is not None and not event.is_printable:
            # Stop it here (no binding runs it a second time on the way up) and skip Input's own handler.
            event.stop()
            event.prevent_default()
            await self.run_action(action)
            return
        await super()._on_key(event)
