"""`/skills` and `/skill`: listing, showing, reloading and explicitly running skills.

    /skills                 the skills this channel may use (needs skills.use)
    /skills show NAME       a skill's description, files and instructions
    /skills reload          re-read the skill folders now and report problems (needs admin)
    /skill NAME [text]      answer `text` with the skill loaded (needs ask and skills.use)
    /NAME [text]            the same, when no built-in command is called NAME

Running a skill explicitly never depends on the model noticing it: the skill is loaded before
the model is called. Without a model, `/skill NAME` shows the playbook itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from core import messages
from core.commands import (
    Command,
    CommandArgs,
    CommandContext,
    NoArgs,
    ParsedCommand,
    Verb,
    declared,
    rest,
    with_verbs,
    word,
)
from core.request import Reply
from core.skills.library import SkillProblem
from core.skills.service import Skills

SHOW_BODY_CHARS = 3_500  # of a skill's body in `/skills show` (a chat message, not a file)


class SkillArgs(CommandArgs):
    name: str = word("NAME")
    text: str = rest("text", "")


class ShowArgs(CommandArgs):
    quotes = False  # a skill's name is one word as typed
    name: str = word("NAME")


def skill_commands(skills: Skills) -> tuple[list[Command], Callable[..., Awaitable[Reply | None]]]:
    """The commands, and the fallback that runs `/NAME` as a skill."""

    async def reload(ctx: CommandContext, _verb: str, _args: NoArgs) -> Reply:
        problems = await asyncio.to_thread(skills.library.load)
        await skills.ready()
        shown = [skills.library.describe(p) for p in problems]
        return Reply(_reload_report(len(skills.library.all()), problems, shown), ephemeral=True)

    async def show(ctx: CommandContext, _verb: str, args: ShowArgs) -> Reply:
        await skills.ready()
        return _show(skills, ctx, args.name)

    async def listing(ctx: CommandContext, _verb: str, _args: NoArgs) -> Reply:
        await skills.ready()
        visible = skills.visible(ctx.session)
        if not visible:
            return Reply(messages.NO_SKILLS_HERE, ephemeral=True)
        pinned = set(ctx.session.pinned_skills)
        lines = [f"**Skills in this channel** ({len(visible)}):"]
        for s in visible:
            mark = " (pinned here)" if s.name in pinned else ""
            lines.append(f"- `{s.name}`{mark}: {_short(s.description, 200)}")
        hint = messages.SKILLS_HINT
        if ctx.model_configured:
            hint += messages.SKILLS_HINT_MODEL
        lines += ["", hint]
        return Reply("\n".join(lines), ephemeral=True)

    async def run_skill(ctx: CommandContext, args: SkillArgs) -> Reply:
        return await _run(ctx, args.name, args.text)

    async def _run(ctx: CommandContext, name: str, text: str) -> Reply:
        ctx.session.require("skills.use")
        await skills.ready()
        skill = skills.usable(ctx.session, name)
        if skill is None:
            return Reply(messages.unknown_skill(name), ok=False, ephemeral=True)
        if not ctx.model_configured:
            return Reply(
                messages.skill_without_model(skill.name) + "\n\n" + _clip(skill.body),
                ok=True,
            )
        return await ctx.ask(
            text or messages.skill_default_request(skill.name), skills=[skill.name]
        )

    async def fallback(ctx: CommandContext, parsed: ParsedCommand) -> Reply | None:
        """`/incident-triage ...` runs that skill when no command has the name."""
        if not ctx.session.allows("skills.use"):
            return None
        await skills.ready()
        if skills.usable(ctx.session, parsed.name) is None:
            return None
        return await _run(ctx, parsed.name, parsed.args)

    commands = [
        with_verbs(
            "skills",
            "the team's skills (playbooks) you can use here",
            [
                Verb((), NoArgs, listing, "skills.use"),
                Verb(("show",), ShowArgs, show, "skills.use"),
                Verb(("reload",), NoArgs, reload, "admin"),
            ],
            personal=True,
            unknown_permission="skills.use",
            usage=messages.SKILLS_USAGE,
        ),
        declared(
            "skill",
            "answer with a skill loaded (also `/NAME [text]`)",
            SkillArgs,
            run_skill,
            permission="ask",
            usage=messages.SKILL_USAGE,
        ),
    ]
    return commands, fallback


def _show(skills: Skills, ctx: CommandContext, name: str) -> Reply:
    skill = skills.usable(ctx.session, name)
    if skill is None:
        return Reply(messages.unknown_skill(name), ok=False, ephemeral=True)
    lines = [f"**{skill.name}**: {skill.description}"]
    if skill.allowed_tools is not None:
        lines.append(f"Tools it allows: {', '.join(skill.allowed_tools) or 'none'}")
    if skill.files:
        lines.append("Files: " + ", ".join(f"`{f}`" for f in skill.files[:30]))
    where = skills.library.relative(skill.folder / "SKILL.md")
    lines.append(f"Source: {'shipped example' if skill.shipped else 'skills folder'}, `{where}`")
    lines += ["", _clip(skill.body)]
    return Reply("\n".join(lines), ephemeral=True)


def _clip(body: str) -> str:
    if len(body) <= SHOW_BODY_CHARS:
        return body or "(no instructions beyond the description)"
    return body[:SHOW_BODY_CHARS].rsplit("\n", 1)[0] + "\n… (cut; the full text is in SKILL.md)"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _reload_report(count: int, problems: list[SkillProblem], shown: list[str]) -> str:
    errors = [p for p in problems if p.error]
    lines = [f"Reloaded: {count} skill(s) loaded, {len(errors)} skipped with errors."]
    lines += [f"- {text}" for text in shown[:20]]
    if len(problems) > 20:
        lines.append(f"- … and {len(problems) - 20} more (`threadline skills check`)")
    return "\n".join(lines)
