"""A team's feature: the on-call tool and command as one unit the bot composes. The worked
example of docs/extending.md.

A `Feature` carries a feature's tools, commands, parts of the prompt and what to close when the
bot stops; `bot.app.build_app(settings, extra_features=[...])` composes it with the built-in
ones, and no line of core changes. (In your own package the two imports below would name it:
`from ourteam.oncall_tool import who_is_on_call`.)
"""

from __future__ import annotations

from oncall_command import ONCALL
from oncall_tool import who_is_on_call

from core.feature import Feature


def oncall_feature() -> Feature:
    return Feature("oncall", tools=(who_is_on_call,), commands=(ONCALL,))
