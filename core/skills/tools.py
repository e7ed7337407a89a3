"""The model's way into skills: `load_skill`, `read_skill_file` and `find_skills`.

All three need `skills.use` and see only the skills the policy lets this conversation use; a
name outside that set reads as unknown, so the tools reveal nothing about other channels'
playbooks.
"""

from __future__ import annotations

import asyncio

from pydantic import Field

from core.errors import ToolError
from core.session import ToolSession
from core.skills.format import MAX_NAME
from core.skills.index import index_line
from core.skills.library import MAX_FILE_BYTES, SkillFileError, SkillLibrary
from core.skills.service import Skills, load_text
from core.tools.context import ToolContext
from core.tools.registry import Tool, ToolArgs, tool
from core.tools.result import ToolResult

MAX_FOUND = 10
# A skill's body may be up to 64 KiB; the agent still cuts any result to a quarter of the
# model's window.
MAX_SKILL_RESULT_CHARS = 70_000


class LoadSkillArgs(ToolArgs):
    name: str = Field(min_length=1, max_length=MAX_NAME, description="The skill's name.")


class ReadSkillFileArgs(ToolArgs):
    name: str = Field(min_length=1, max_length=MAX_NAME, description="The skill's name.")
    path: str = Field(
        min_length=1,
        max_length=300,
        description="A file inside the skill's folder, as load_skill listed it, e.g. "
        "references/checklist.md.",
    )


class FindSkillsArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=500, description="What the user needs.")
    k: int = Field(5, ge=1, le=MAX_FOUND, description="How many skills at most.")


def skill_tools(skills: Skills) -> list[Tool]:
    def unknown(session: ToolSession, name: str) -> ToolError:
        names = [s.name for s in skills.visible(session)]
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        return ToolError(f"there is no skill {name[:MAX_NAME]!r} here (skills: {shown or 'none'})")

    # Offered only where some skill is usable: no schema tokens otherwise.
    async def any_skill(session: ToolSession) -> bool:
        await skills.ready()
        return bool(skills.visible(session))

    @tool(
        permission="skills.use",
        available=any_skill,
        max_result_chars=MAX_SKILL_RESULT_CHARS,
        activity="Loading the skill `{name}`",
    )
    async def load_skill(ctx: ToolContext, args: LoadSkillArgs) -> ToolResult:
        """Load a team skill (a playbook) by name and get its instructions. Call it when the
        request matches a skill in the skills list (or one find_skills found), then follow
        the instructions it returns."""
        await skills.ready()
        skill = skills.usable(ctx.session, args.name)
        if skill is None:
            raise unknown(ctx.session, args.name)
        skills.narrow(ctx.session, skill)
        await skills.record(ctx.session.conversation, skill.name)
        return ToolResult(load_text(skill), skill=skill.name)

    @tool(
        permission="skills.use",
        available=any_skill,
        max_result_chars=MAX_FILE_BYTES + 100,
        activity="Reading `{path}` of the skill `{name}`",
    )
    async def read_skill_file(ctx: ToolContext, args: ReadSkillFileArgs) -> str:
        """Read one file of a loaded skill (a reference, template or example it points to)."""
        await skills.ready()
        skill = skills.usable(ctx.session, args.name)
        if skill is None:
            raise unknown(ctx.session, args.name)
        try:
            return await asyncio.to_thread(SkillLibrary.read_file, skill, args.path, MAX_FILE_BYTES)
        except SkillFileError as exc:
            raise ToolError(str(exc)) from None

    @tool(permission="skills.use", available=any_skill, activity="Looking for a skill")
    async def find_skills(ctx: ToolContext, args: FindSkillsArgs) -> str:
        """Search the team's skills (playbooks) by what the user needs, when the skills list
        says more exist than it shows. Returns names and descriptions; load one with
        load_skill."""
        ranked = await skills.rank(ctx.session, args.query)
        if not ranked:
            return "No skills are available in this conversation."
        return "\n".join(index_line(s) for s in ranked[: args.k])

    return [load_skill, read_skill_file, find_skills]
