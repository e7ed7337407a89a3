"""The raw Slack JSON Threadline reads, typed. Only the fields we use; Slack sends more.

Conversion to `core.Request` happens in one place, `adapters.slack.translate`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class Authorization(TypedDict):
    enterprise_id: str | None
    team_id: str | None
    user_id: str
    is_bot: bool


class SlackFile(TypedDict, total=False):
    """A file object as events and `conversations.replies` carry it (`files[]`)."""

    id: str
    name: str
    title: str
    mimetype: str
    filetype: str
    size: int
    subtype: str  # `slack_audio` for an audio clip recorded in Slack
    mode: str  # `hosted`, `snippet`, `external` (a link elsewhere), `tombstone` (deleted)
    url_private: str
    url_private_download: str
    # `check_file_info`: a partial object (Slack Connect, some events); `files.info` has the rest.
    file_access: str


class MessageEvent(TypedDict):
    """`app_mention` and `message` events (channels, private channels, DMs, group DMs)."""

    type: Literal["app_mention", "message"]
    channel: str
    ts: str
    text: NotRequired[str]
    user: NotRequired[str]
    bot_id: NotRequired[str]
    subtype: NotRequired[str]
    thread_ts: NotRequired[str]
    channel_type: NotRequired[Literal["channel", "group", "im", "mpim", "app_home"]]
    team: NotRequired[str]
    files: NotRequired[list[SlackFile]]
    # `message_changed`: the message as it reads now; `message_deleted`: which one went.
    message: NotRequired[HistoryMessage]
    previous_message: NotRequired[HistoryMessage]
    deleted_ts: NotRequired[str]


class EventCallback(TypedDict):
    """The Events API envelope (`type: event_callback`) as delivered over HTTP or Socket Mode."""

    type: Literal["event_callback"]
    team_id: str
    event: MessageEvent
    event_id: str
    event_time: NotRequired[int]
    api_app_id: NotRequired[str]
    enterprise_id: NotRequired[str | None]
    is_ext_shared_channel: NotRequired[bool]
    authorizations: NotRequired[list[Authorization]]


class ReactedItem(TypedDict):
    type: str  # "message" (also "file", "file_comment")
    channel: NotRequired[str]
    ts: NotRequired[str]


class ReactionAddedEvent(TypedDict):
    """`reaction_added`: `user` put `reaction` (an emoji name) on `item`, written by
    `item_user`."""

    type: Literal["reaction_added"]
    user: str
    reaction: str
    item: ReactedItem
    item_user: NotRequired[str]
    event_ts: NotRequired[str]


class ReactionCallback(TypedDict):
    type: Literal["event_callback"]
    team_id: str
    event: ReactionAddedEvent
    event_id: str
    enterprise_id: NotRequired[str | None]


class HistoryMessage(TypedDict):
    """A message as `conversations.replies` returns it."""

    ts: str
    text: NotRequired[str]
    user: NotRequired[str]
    bot_id: NotRequired[str]
    thread_ts: NotRequired[str]
    blocks: NotRequired[list[dict[str, Any]]]
    subtype: NotRequired[str]
    username: NotRequired[str]  # another app's message: the name it posted under
    bot_profile: NotRequired[dict[str, Any]]
    files: NotRequired[list[SlackFile]]


class UserProfile(TypedDict, total=False):
    display_name: str
    real_name: str


class SlackUser(TypedDict, total=False):
    """`users.info`'s `user` (the fields we read)."""

    id: str
    name: str
    real_name: str
    profile: UserProfile


class SlashCommand(TypedDict):
    """A slash command invocation (form-encoded over HTTP; bolt hands it over as a dict)."""

    command: str
    text: str
    team_id: str
    channel_id: str
    user_id: str
    trigger_id: str
    response_url: NotRequired[str]
    enterprise_id: NotRequired[str]
    channel_name: NotRequired[str]
    user_name: NotRequired[str]
    api_app_id: NotRequired[str]


class AuthTest(TypedDict):
    """`auth.test` for a bot token."""

    ok: bool
    team_id: str
    user_id: str
    bot_id: NotRequired[str]
    enterprise_id: NotRequired[str | None]
    team: NotRequired[str]
    url: NotRequired[str]


class PostedMessage(TypedDict):
    """What `chat.postMessage` answers (the fields we keep)."""

    ok: bool
    channel: str
    ts: str


class MessageMetadata(TypedDict):
    """Metadata attached to each posted part, so a lost response can be reconciled."""

    event_type: str
    event_payload: dict[str, str | int]


class ThreadMessage(TypedDict):
    """A message as `conversations.replies` / `conversations.history` return it."""

    ts: str
    text: NotRequired[str]
    bot_id: NotRequired[str]
    thread_ts: NotRequired[str]
    metadata: NotRequired[MessageMetadata]


class ClickedAction(TypedDict):
    action_id: str
    type: str
    value: NotRequired[str]
    block_id: NotRequired[str]


class Team(TypedDict):
    id: str


class ClickContainer(TypedDict, total=False):
    type: str
    message_ts: str
    channel_id: str
    thread_ts: str
    is_ephemeral: bool


class ClickUser(TypedDict):
    id: str


class BlockActions(TypedDict):
    """A `block_actions` interaction (a button click), as bolt hands it to a listener: the
    signed form field `payload`, parsed. `user` and `team` are what Slack verified."""

    type: Literal["block_actions"]
    user: ClickUser
    team: Team
    enterprise: NotRequired[Team | None]
    container: NotRequired[ClickContainer]
    channel: NotRequired[Team]
    actions: list[ClickedAction]
    trigger_id: NotRequired[str]  # opens a form (`views.open`) within 3 s of the click


class SubmittedView(TypedDict):
    callback_id: str
    private_metadata: NotRequired[str]  # what Threadline put there when it opened the form
    # block id -> action id -> the input's state (`{"type": ..., "value": ...}`)
    state: NotRequired[dict[str, dict[str, dict[str, dict[str, Any]]]]]


class ViewSubmission(TypedDict):
    """A `view_submission` interaction (a form sent), as bolt hands it to a listener. `user`
    and `team` are what Slack verified; the view is the one Threadline opened."""

    type: Literal["view_submission"]
    user: ClickUser
    team: Team
    enterprise: NotRequired[Team | None]
    view: SubmittedView
