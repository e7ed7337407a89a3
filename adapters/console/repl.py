"""The interactive console channel (`threadline chat`, and `threadline run` without tokens)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.console.translate import ConsoleIdentity, save_attachments, to_request
from core.service import Core

BANNER = (
    "Threadline console — you are {user} in #{channel} (thread {thread}). "
    "Type /help for commands, Ctrl-D or /quit to leave."
)


async def chat(core: Core, who: ConsoleIdentity, attachments_dir: Path) -> int:
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    console.print(BANNER.format(user=who.user, channel=who.channel, thread=who.thread), style="dim")
    if not core.model_configured:
        console.print("No language model configured (LLM_BASE_URL / LLM_MODEL).", style="yellow")
    while True:
        try:
            line = await asyncio.to_thread(console.input, "[bold cyan]you>[/] ")
        except (EOFError, KeyboardInterrupt):
            console.print()
            return 0
        if line.strip() in ("/quit", "/exit"):
            return 0
        with console.status("thinking…", spinner="dots"):
            reply = await core.handle(to_request(line, who))
        console.print(Markdown(reply.text), style=None if reply.ok else "red")
        for path in save_attachments(reply, attachments_dir):
            console.print(f"[attachment saved: {path}]", style="dim")
        for notice in reply.notices:
            console.print(notice, style="yellow")
