"""The built-in features, each built from the settings and what it shares with the others
(`bot/app.py` composes them). A builder returns the `core.feature.Feature` (tools, commands,
prompt parts, lifetime) and the handles other parts of the app need (the CLI's `index`, the
adapters' confirmations, the digest runner's repositories).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime

from config.settings import Settings
from core.code.commands import code_commands
from core.code.embeddings import Embedder
from core.code.graph.pool import GraphWorkers
from core.code.graph.repomap import RepoMaps
from core.code.indexer import Indexer
from core.code.repos import RepoStore
from core.code.search import CodeSearch
from core.code.tools import code_tools
from core.commands import builtin_commands
from core.digest.commands import digest_commands
from core.digest.runner import DigestRunner
from core.digest.store import DigestStore
from core.feature import Feature, PromptParts
from core.feedback.commands import feedback_commands
from core.feedback.store import FeedbackStore
from core.mcp.commands import mcp_commands
from core.mcp.confirm import ConfirmationGate
from core.mcp.confirm_store import ConfirmationStore
from core.mcp.manager import McpManager
from core.mcp.pins import PinStore
from core.mcp.resources import resources_for_prompt
from core.memory.commands import memory_commands
from core.memory.facts import MemoryStore
from core.memory.history import HistoryStore
from core.memory.tools import memory_tools
from core.policy import Policy
from core.skills.commands import skill_commands
from core.skills.index import SkillRanker
from core.skills.library import SkillLibrary, default_folders
from core.skills.service import Skills, SkillsConfig
from core.skills.tools import skill_tools
from core.store.engine import Database
from core.tools.builtin import builtin_tools
from core.tools.registry import ToolRegistry
from core.tts.commands import voice_commands
from core.tts.service import VoiceService
from core.tts.tool import voice_tools


def basics() -> Feature:
    """/help, /budget, /ask and the tools every conversation may have."""
    return Feature("basics", tools=builtin_tools(), commands=builtin_commands())


def memory(db: Database, clock: Callable[[], datetime]) -> tuple[Feature, MemoryStore]:
    """Long-term memory: /save, /memory, the memory tools and the facts in the prompt."""
    store = MemoryStore(db, clock)
    feature = Feature(
        "memory",
        tools=memory_tools(store),
        commands=memory_commands(store),
        prompt=PromptParts(memory=store),
    )
    return feature, store


@dataclass(frozen=True, slots=True)
class Code:
    feature: Feature
    repos: RepoStore
    search: CodeSearch
    indexer: Indexer
    graph_workers: GraphWorkers


def code(settings: Settings, db: Database, search: CodeSearch) -> Code:
    """Code: /index, /graph, the code tools, the repo map, over `search`
    (`bot.code_parts.code_search`: its vector store opens on first use). Graph workers start
    only once an index has enough files to pay for them."""
    repos = RepoStore(db, settings.data_dir / "repos")
    graph_workers = GraphWorkers()
    indexer = Indexer(db, search, graph_workers)

    async def close_workers() -> None:
        await asyncio.to_thread(graph_workers.close)

    feature = Feature(
        "code",
        tools=code_tools(repos, search),
        commands=code_commands(repos, indexer),
        prompt=PromptParts(code_map=RepoMaps(repos)),
        # The database closes after every feature (it is composed first).
        close=(search.aclose, close_workers),
    )
    return Code(feature, repos, search, indexer, graph_workers)


def skills(
    settings: Settings,
    db: Database,
    embedder: Embedder,
    tool_names: Callable[[], Collection[str]],
) -> tuple[Feature, Skills]:
    """Skills: /skills, /skill NAME (and /NAME), the skills tools and index. They load on
    first use; the ranker shares the code search embedder."""
    service = Skills(
        SkillLibrary(default_folders(settings.skills_dirs, examples=settings.skills_examples)),
        db,
        SkillRanker(embedder),
        SkillsConfig(index_share=settings.skills_index_share),
        tool_names=tool_names,  # what a skill's `allowed-tools` patterns match
    )
    commands, run_by_name = skill_commands(service)
    feature = Feature(
        "skills",
        tools=skill_tools(service),
        commands=commands,
        prompt=PromptParts(skills=service),
        fallback=run_by_name,
    )
    return feature, service


def voice(service: VoiceService, history: HistoryStore) -> Feature:
    """Voice replies: /tts, /voice and the speak tool."""
    return Feature(
        "voice",
        tools=voice_tools(),
        commands=voice_commands(service, history),
        close=(service.aclose,),
    )


@dataclass(frozen=True, slots=True)
class Mcp:
    feature: Feature
    manager: McpManager
    confirmations: ConfirmationGate


def mcp(
    settings: Settings, db: Database, registry: ToolRegistry, clock: Callable[[], datetime]
) -> Mcp:
    """MCP servers: /mcp, their tools (which join the registry as servers connect), their
    resources in the prompt, and confirmations (in SQL: a click may reach another process)."""
    confirmations = ConfirmationGate(
        ConfirmationStore(db, clock), timeout=settings.mcp_confirm_timeout, clock=clock
    )
    manager = McpManager(settings.mcp, registry, PinStore(db, clock))
    feature = Feature(
        "mcp",
        commands=mcp_commands(manager),
        prompt=PromptParts(resources=lambda session: resources_for_prompt(manager, session)),
        close=(manager.aclose,),
    )
    return Mcp(feature, manager, confirmations)


def digests(store: DigestStore, runner: DigestRunner) -> Feature:
    """Scheduled digests: /digest (the scheduler runs in `worker` and `run`)."""
    return Feature("digests", commands=digest_commands(store, runner))


def feedback(store: FeedbackStore) -> Feature:
    """Ratings of answers: /feedback (the buttons are the adapters'; the records are core's)."""
    return Feature("feedback", commands=feedback_commands(store))


def operator_console(
    settings: Settings, db: Database, policy: Policy, clock: Callable[[], datetime]
) -> Feature:
    """The operator web console's chat side: /console sends an admin a sign-in link (the
    pages themselves are bot/console, served with the HTTP endpoints)."""
    from core.operator.commands import console_commands
    from core.operator.links import SignInLinks

    return Feature(
        "console",
        commands=console_commands(SignInLinks(db, policy, clock), settings.console_url),
    )
