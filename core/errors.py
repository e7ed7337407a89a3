"""Threadline's exceptions share one root, `ThreadlineError`, in these families:

- `ConfigError`: Threadline cannot start as configured (settings, policy, database URL or
  schema, a shared resource another process holds); `str(exc)` is what to print, without
  secrets. The CLI catches this one family.
- `ToolError`: the model can fix it (bad argument, nothing found); its text goes back to the
  model as the tool result.
- `Refusal`: a friendly "no" for the user (missing permission, budget used up, input too long);
  its text is shown as is.
- anything else is a bug: logged with context, the user gets a generic line.
"""

from __future__ import annotations


class ThreadlineError(Exception):
    """The root of Threadline's own exceptions."""


class ConfigError(ThreadlineError):
    """Start-up cannot go on as configured; `str(exc)` says why, readable and without secrets."""


class ToolError(ThreadlineError):
    """Raised by a tool when the model can correct the call; the message is model-facing."""


class Refusal(ThreadlineError):
    """A user-facing refusal. `str(exc)` is safe to show."""


class PermissionDenied(Refusal):
    def __init__(self, permission: str) -> None:
        from core import messages

        super().__init__(messages.permission_denied(permission))
        self.permission = permission
