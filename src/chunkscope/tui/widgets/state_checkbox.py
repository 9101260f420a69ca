"""A check box whose state reads without colour."""

from __future__ import annotations

from textual.widgets import Checkbox


class StateCheckbox(Checkbox):
    """A check box whose mark is drawn only when checked: Textual's draws an X either way and tells the two apart
    by colour alone, which a monochrome terminal, NO_COLOR or a colour-blind reader cannot see."""

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # noqa: N802 - Textual's (documented) class attribute
        return "X" if self.value else " "
