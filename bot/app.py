"""The composition root: the only place that builds and connects Threadline's parts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from bot.code_parts import build_embedder, code_search
from bot.presence import Presence
from config.settings import ResolvedProvider, Settings
from core.code.collection import EDGE_DIR as EDGE_DIR  # under DATA_DIR: a shard per model
from core.llm.client import ChatModel
from core.metrics import Metrics
from core.service import Core
from core.store.engine import Database
from core.tools.registry import Tool

# A note about an answer cut off by a dying process is due this long after its deadline.
CUT_NOTE_MARGIN = timedelta(minutes=2)

if TYPE_CHECKING:
    from adapters.slack.app import SlackAdapter
    from core.code.graph.pool import GraphWorkers
    from core.code.indexer import Indexer
    from core.code.repos import RepoStore
    from core.code.search import CodeSearch
    from core.digest.runner import DigestRunner
    from core.feature import Feature
    from core.llm.usage import UsageRecorder
    from core.mcp.confirm import ConfirmationGate
    from core.mcp.manager import McpManager
    from core.outbox import Outbox
    from core.policy import Policy
    from core.quotas import QuotaLedger
    from core.skills.service import Skills
    from core.tts.engine import SpeechEngine
    from core.tts.service import VoiceService


@dataclass
class App:
    settings: Settings
    db: Database
    core: Core
    model: ChatModel | None  # the default model
    models: list[ChatModel]  # the other models the policy chooses per channel
    metrics: Metrics | None
    repos: RepoStore
    search: CodeSearch
    indexer: Indexer
    graph_workers: GraphWorkers
    skills: Skills
    outbox: Outbox
    digests: DigestRunner
    mcp: McpManager  # start() connects in the background (run, serve, worker, chat)
    confirmations: ConfirmationGate  # adapters that can ask register a Confirmer
    voice: VoiceService
    features: list[Feature]
    # Closes what the app opened, last composed first: the features, the models, the database.
    closing: AsyncExitStack
    # What the app's parts see as now (tests pin it); the operator console reads it too.
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    # The chat platforms this process has connected (adapters register; the heartbeat reads).
    presence: Presence = field(default_factory=Presence)

    async def aclose(self) -> None:
        await self.closing.aclose()


def build_app(
    settings: Settings,
    *,
    extra_tools: Iterable[Tool] = (),
    extra_features: Iterable[Feature] = (),
    with_metrics: bool = False,
    model: ChatModel | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> App:
    """Assemble an app from settings. Cheap: no connection is opened until first use.

    The app is a list of features (`bot/features.py`), each contributing its tools, commands,
    prompt parts and lifetime through `core.feature.Feature`; `extra_features` (a team's own)
    and `extra_tools` join them.
    `model` replaces the configured LLM (tests pass their own ChatModel implementations).
    Raises `PolicyError` when the policy file is unusable.
    """
    # Imported here, not at the top: `threadline --help` must not pay for every feature.
    from bot import features as built_in
    from bot.platforms import builtin_platforms
    from core.agent import Agent
    from core.agent.thread_context import ThreadContextConfig
    from core.attachments import AttachmentReader
    from core.code.answers import offline_answer
    from core.code.checkout import CodeLinks
    from core.commands import CommandRegistry
    from core.digest.runner import DigestRunner, OutboxSink
    from core.digest.store import DigestStore
    from core.events import EventLedger
    from core.feature import Feature, closing, commands_of, fallback_of, prompt_of, tools_of
    from core.feedback.store import FeedbackStore
    from core.llm.usage import UsageRecorder
    from core.memory.history import HistoryStore
    from core.outbox import Outbox, owner_id
    from core.outbox.cut import CutNotes
    from core.policy import Policy
    from core.prompt import PromptBuilder
    from core.quotas import QuotaLedger
    from core.service import Limits
    from core.session import ToolSession
    from core.tools.audit import AuditLog
    from core.tools.dispatcher import Dispatcher
    from core.tools.registry import ToolRegistry

    policy = Policy.load(settings.policy_file)
    stack = AsyncExitStack()
    db = Database(
        settings.database,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
    )
    stack.push_async_callback(db.dispose)  # first in: closed last
    quotas = QuotaLedger(db, clock)
    usage = UsageRecorder(db, clock)
    history = HistoryStore(db, clock)
    if model is None:
        model = _configured_model(settings)
    named = _policy_models(settings, policy)  # per-channel models (a rule's `model = "NAME"`)
    embedder = build_embedder(settings)  # cheap: a local model loads on first use
    # Filled from the features' tools below; MCP tools join it as their servers connect.
    registry = ToolRegistry()

    memory_feature, _memory = built_in.memory(db, clock)
    code = built_in.code(settings, db, code_search(settings, db, embedder))
    tool_names: list[str] = []  # a skill's `allowed-tools` matches the built-in tools
    skills_feature, skills = built_in.skills(settings, db, embedder, lambda: tool_names)
    voice = build_voice(settings, quotas, usage, model, clock)
    mcp = built_in.mcp(settings, db, registry, clock)
    platforms = builtin_platforms()  # chat platforms are registered here, never listed in core
    outbox = Outbox(db, clock, platforms=platforms)
    digest_store = DigestStore(db, clock)
    # Metric labels name only tools registered at the time (a model may propose any name).
    metrics = (
        Metrics(known_tool=lambda n: registry.get(n) is not None, known_platform=platforms.known)
        if with_metrics
        else None
    )

    def channel_model(session: ToolSession) -> ChatModel | None:
        chosen = core.agent_for(session)
        return chosen.model if chosen is not None else None

    digests = DigestRunner(
        store=digest_store,
        db=db,
        repos=code.repos,
        policy=policy,
        quotas=quotas,
        usage=usage,
        sink=OutboxSink(outbox),
        owner=owner_id(),
        model_for=channel_model,
        speak=lambda session, text, title: voice.audio(session, text, title=title),
        on_outcome=metrics.digest_run if metrics is not None else lambda _outcome: None,
        clock=clock,
    )
    feedback = FeedbackStore(db, clock) if settings.feedback else None
    features = [
        built_in.basics(),
        memory_feature,
        code.feature,
        skills_feature,
        built_in.voice(voice, history),
        built_in.digests(digest_store, digests),
        *([built_in.feedback(feedback)] if feedback is not None else []),
        *([built_in.operator_console(settings, db, policy, clock)] if settings.console else []),
        mcp.feature,
        Feature("extra", tools=tuple(extra_tools)),
        *extra_features,
    ]
    for tool in tools_of(features):
        registry.add(tool)
    tool_names.extend(registry.names())
    prompt = prompt_of(features)
    dispatcher = Dispatcher(
        registry,
        AuditLog(db, clock),
        max_args_chars=settings.tool_max_args_chars,
        max_result_chars=settings.tool_max_result_chars,
        confirm=mcp.confirmations,
    )

    code_links = CodeLinks(code.repos, settings.forge_hosts)

    def make_agent(chat_model: ChatModel) -> Agent:
        # One agent per model: each keeps its own window, token calibration and compaction
        # settings; everything else (tools, memory, quotas, history) is shared.
        stack.push_async_callback(chat_model.aclose)
        return Agent(
            model=chat_model,
            dispatcher=dispatcher,
            history=history,
            quotas=quotas,
            usage=usage,
            db=db,
            prompt=PromptBuilder(persona=settings.persona),
            memory=prompt.memory,
            code_map=prompt.code_map,
            skills=prompt.skills,
            resources=prompt.resources,
            metrics=metrics,
            clock=clock,
            deadline=settings.request_deadline,
            links=code_links.links,
            thread=ThreadContextConfig(share=settings.thread_context_share),
        )

    agent = make_agent(model) if model is not None else None
    agents: dict[str, Agent] = {}
    for name, chat_model in named.items():
        if agent is not None and agent.model.spec.name == name:
            agents[name] = agent
        else:
            agents[name] = make_agent(chat_model)
    closing(stack, features)
    core = Core(
        policy=policy,
        commands=CommandRegistry(commands_of(features), fallback=fallback_of(features)),
        quotas=quotas,
        usage=usage,
        agent=agent,
        agents=agents,
        events=EventLedger(db),
        limits=Limits(
            max_message_chars=settings.max_message_chars,
            max_concurrent=settings.max_concurrent_requests,
            deadline=settings.request_deadline,
        ),
        metrics=metrics,
        clock=clock,
        offline_answer=offline_answer(code.repos, code.search),
        attachments=AttachmentReader(settings.attachment_limits()),
        voice=voice,
        # Due well after any request's deadline: only a process that died leaves it armed.
        cut_notes=CutNotes(
            outbox, clock, after=timedelta(seconds=settings.request_deadline) + CUT_NOTE_MARGIN
        ),
        feedback=feedback,
    )
    return App(
        settings=settings,
        db=db,
        core=core,
        model=model,
        models=[a.model for a in agents.values() if a is not agent],
        metrics=metrics,
        repos=code.repos,
        search=code.search,
        indexer=code.indexer,
        graph_workers=code.graph_workers,
        skills=skills,
        outbox=outbox,
        digests=digests,
        mcp=mcp.manager,
        confirmations=mcp.confirmations,
        voice=voice,
        features=features,
        closing=stack,
        clock=clock,
    )


def build_speech_engine(settings: Settings) -> SpeechEngine:
    """The configured engine. Cheap: local workers start, and clients connect, on first use."""
    from core.tts.local import LocalEngine
    from core.tts.openai_engine import DEFAULT_VOICE, OpenAISpeechEngine
    from core.tts.worker import ESPEAK_DEFAULT_VOICE, PIPER_DEFAULT_VOICE

    engine = settings.tts_engine_resolved
    if engine == "openai":
        key = settings.tts_api_key
        return OpenAISpeechEngine(
            base_url=settings.tts_base_url,
            api_key=key.get_secret_value() if key else None,
            model=settings.tts_model,
            voice=settings.tts_voice or DEFAULT_VOICE,
            timeout=settings.tts_timeout,
        )
    default = PIPER_DEFAULT_VOICE if engine == "piper" else ESPEAK_DEFAULT_VOICE
    return LocalEngine(
        engine,
        settings.tts_voice or default,
        workers=settings.tts_workers,
        segment_bytes=settings.tts_segment_bytes,
        timeout=settings.tts_timeout,
        idle_timeout=settings.tts_worker_idle,
    )


def build_voice(
    settings: Settings,
    quotas: QuotaLedger,
    usage: UsageRecorder,
    model: ChatModel | None,
    clock: Callable[[], datetime],
) -> VoiceService:
    from core.tts.service import VoiceConfig, VoiceService
    from core.tts.summary import ModelSummarizer

    summarize = None
    if model is not None and settings.tts_summarize:
        summarize = ModelSummarizer(model, quotas, usage)
    config = VoiceConfig(max_chars=settings.tts_max_chars, format=settings.tts_format)
    return VoiceService(
        build_speech_engine(settings), quotas, config, summarize=summarize, clock=clock
    )


def slack_http_configured(settings: Settings) -> bool:
    """Slack HTTP mode (`serve`): a signing secret, or a bot token without an app token (a
    missing piece is then reported by `build_slack` instead of silently serving no Slack)."""
    return bool(
        settings.slack_signing_secret or (settings.slack_bot_token and not settings.slack_app_token)
    )


def build_slack(app: App, mode: Literal["http", "socket"], **tuning: float) -> SlackAdapter:
    """The Slack adapter on this app's core. Raises `SlackConfigError` naming the variable.

    `tuning` overrides timing knobs of `SlackConfig` (tests, benchmarks)."""
    from adapters.slack.app import SlackAdapter
    from adapters.slack.config import SlackConfig

    s = app.settings
    config = SlackConfig(
        bot_token=s.slack_bot_token.get_secret_value() if s.slack_bot_token else None,
        signing_secret=(
            s.slack_signing_secret.get_secret_value() if s.slack_signing_secret else None
        ),
        app_token=s.slack_app_token.get_secret_value() if s.slack_app_token else None,
        api_url=s.slack_api_url,
        stream=s.slack_stream,
        assistant_status=s.slack_assistant_status,
        **tuning,
    )
    return SlackAdapter(app.core, config, mode, app.confirmations)


def _policy_models(settings: Settings, policy: Policy) -> dict[str, ChatModel]:
    """The models policy rules choose, by provider name. A name that is not a
    `[providers.NAME]` of the settings file is a start-up error naming the rule."""
    from core.policy import PolicyError

    models: dict[str, ChatModel] = {}
    for where, name in policy.models():
        if name in models:
            continue
        if name not in settings.providers:
            known = ", ".join(sorted(settings.providers)) or "none defined"
            raise PolicyError(
                f"policy file {policy.source}: {where}: model {name!r} is not a provider in "
                f"the settings file (known: {known}; add a [providers.{name}] table)"
            )
        models[name] = _openai_model(settings.provider(name))
    return models


def _configured_model(settings: Settings) -> ChatModel | None:
    resolved = settings.llm()
    if resolved is None:
        return None
    return _openai_model(resolved)


def _openai_model(resolved: ResolvedProvider) -> ChatModel:
    from core.llm.client import OpenAICompatibleModel
    from core.llm.providers import ProviderSpec

    return OpenAICompatibleModel(
        ProviderSpec(
            name=resolved.name,
            model=resolved.model,
            base_url=resolved.base_url,
            api_key=resolved.api_key.get_secret_value() if resolved.api_key else None,
            context_window=resolved.context_window,
            max_output_tokens=resolved.max_output_tokens,
            timeout=resolved.timeout,
            max_retries=resolved.max_retries,
            compact_threshold=resolved.compact_threshold,
            max_tokens_param=resolved.max_tokens_param,
            stream=resolved.stream,
            vision=resolved.vision,
            transcription_model=resolved.transcription_model,
        )
    )
