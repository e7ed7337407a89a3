"""The three error families.

- `ToolError`: the model can fix it (bad argument, nothing found); its text goes back to the
  model as the tool result.
- `Refusal`: a friendly "no" for the user (missing permission, budget used up, input too long);
  its text is shown as is.
- anything else is a bug: logged with context, the user gets a generic line.
"""

from __future__ import annotations


class ToolError(Exception):
    """Raised by a tool when the model can correct the call; the message is model-facing."""


class Refusal(Exception):
    """A user-facing refusal. `str(exc)` is safe to show."""


class PermissionDenied(Refusal):
    def __init__(self, permission: str) -> None:
        from core import messages

        super().__init__(messages.permission_denied(permission))
        self.permission = permission
