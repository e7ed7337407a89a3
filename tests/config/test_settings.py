"""Settings validation (config/settings.py): clear start-up errors that never print secrets.

The autouse `isolated_env` fixture clears LLM_*/THREADLINE_*/... variables, points
THREADLINE_CONFIG at an empty TOML file and chdirs into `tmp_path`, so `.env` files written
there are the only ones read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import DEFAULT_POLICY_FILE, SettingsError, load_settings

SECRET = "sk-live-9f8e7d6c5b4a"


def write_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str) -> Path:
    path = tmp_path / "custom-threadline.toml"
    path.write_text(text)
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    return path


def settings_error(**overrides: object) -> str:
    with pytest.raises(SettingsError) as info:
        load_settings(**overrides)
    return str(info.value)


# --- URLs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
        ("  http://127.0.0.1:8000/v1/  ", "http://127.0.0.1:8000/v1"),
        ("\thttps://api.example.test/v1//\n", "https://api.example.test/v1"),
        ("http://localhost:11434/v1", "http://localhost:11434/v1"),
    ],
)
def test_base_url_is_trimmed(monkeypatch: pytest.MonkeyPatch, raw: str, expected: str) -> None:
    monkeypatch.setenv("LLM_BASE_URL", raw)
    monkeypatch.setenv("LLM_MODEL", "m")
    settings = load_settings()
    assert settings.llm_base_url == expected
    resolved = settings.llm()
    assert resolved is not None
    assert resolved.base_url == expected


@pytest.mark.parametrize(
    "raw", ["ftp://example.test/v1", "127.0.0.1:8000/v1", "http://", "file:///x"]
)
def test_invalid_url_scheme_names_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("LLM_BASE_URL", raw)
    monkeypatch.setenv("LLM_MODEL", "m")
    msg = settings_error()
    assert "LLM_BASE_URL" in msg
    assert "http://" in msg


def test_other_urls_are_validated_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_API_URL", "slack.test/api/")
    assert "SLACK_API_URL" in settings_error()
    monkeypatch.setenv("SLACK_API_URL", " http://127.0.0.1:9/api/ ")
    monkeypatch.setenv("DISCORD_API_URL", "ws://127.0.0.1:9")
    msg = settings_error()
    assert "DISCORD_API_URL" in msg
    assert "SLACK_API_URL" not in msg


def test_empty_base_url_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "   ")
    settings = load_settings()
    assert settings.llm_base_url is None
    assert settings.llm() is None


# --- API keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [f"\n{SECRET}\n", f"{SECRET}\n", f"  {SECRET}\r\n", f"\t{SECRET} "])
def test_api_key_outer_whitespace_is_trimmed(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setenv("LLM_API_KEY", raw)
    settings = load_settings()
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == SECRET
    resolved = settings.llm()
    assert resolved is not None and resolved.api_key is not None
    assert resolved.api_key.get_secret_value() == SECRET


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("sk-live-9f8e\n7d6c5b4a", "whitespace"),
        ("sk-live-9f8e 7d6c5b4a", "whitespace"),
        ("sk-live-9f8e\t7d6c5b4a", "whitespace"),
        ("sk-live-9f8e\r\n7d6c5b4a", "whitespace"),
        # HTTP headers carry only ASCII: such keys passed start-up, then failed every question.
        ("sk-live-9f8e\u200b7d6c5b4a", "ASCII"),  # a zero-width space from a bad paste
        ("sk-live-9f8e7d6c5b4a\u200b", "ASCII"),  # ...at the end, where strip() does not reach
        ("\ufeffsk-live-9f8e7d6c5b4a", "ASCII"),  # a byte-order mark
        ("sk-live-9f8e\u20137d6c5b4a", "ASCII"),  # an en dash from a word processor
        ("sk-live-9f8e7d6c5b4\u0430", "ASCII"),  # a Cyrillic a
        ("sk-live-9f8e\x1b7d6c5b4a", "ASCII"),  # a control character (escape)
    ],
)
def test_api_key_with_whitespace_or_non_ascii_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch, raw: str, reason: str
) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setenv("LLM_API_KEY", raw)
    with pytest.raises(SettingsError) as info:
        load_settings()
    msg = str(info.value)
    assert "LLM_API_KEY" in msg and reason in msg
    for fragment in ("sk-live", "9f8e", "7d6c5b4"):
        assert fragment not in msg
        assert fragment not in repr(info.value)
    # The pydantic error (which holds the input value) is not chained for display.
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_other_secrets_are_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-123 456")
    msg = settings_error()
    assert "SLACK_BOT_TOKEN" in msg
    assert "xoxb" not in msg


def test_api_key_passed_as_argument_is_validated_too() -> None:
    msg = settings_error(llm_base_url="http://127.0.0.1:9", llm_model="m", llm_api_key="a b")
    assert "LLM_API_KEY" in msg


def test_repr_never_shows_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "m")
    monkeypatch.setenv("LLM_API_KEY", SECRET)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("DISCORD_TOKEN", "discord-very-secret")
    settings = load_settings()
    for text in (repr(settings), str(settings), repr(settings.llm()), str(settings.model_dump())):
        assert SECRET not in text
        assert "xoxb-very-secret" not in text
        assert "discord-very-secret" not in text
    assert settings.slack_bot_token is not None
    assert settings.slack_bot_token.get_secret_value() == "xoxb-very-secret"


# --- model / provider ---------------------------------------------------------------------------


def test_no_llm_at_all_is_supported() -> None:
    settings = load_settings()
    assert settings.llm() is None


def test_missing_model_with_base_url_names_llm_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    msg = settings_error()
    assert "LLM_MODEL" in msg
    assert "model" in msg


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
def test_blank_model_counts_as_missing(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", blank)
    assert "LLM_MODEL" in settings_error()


def test_model_name_is_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", " qwen2.5:7b \n")
    resolved = load_settings().llm()
    assert resolved is not None
    assert resolved.model == "qwen2.5:7b"


def test_key_without_model_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_API_KEY", SECRET)
    msg = settings_error()
    assert "LLM_MODEL" in msg
    assert SECRET not in msg


PROVIDERS_TOML = """
[providers.local]
base_url = "http://127.0.0.1:11434/v1/"
model = "qwen2.5:7b"
api_key_env = "LOCAL_LLM_KEY"
context_window = 65536
max_retries = 0

[providers.other]
base_url = "http://127.0.0.1:9999/v1"
model = "other-model"
"""


def test_named_provider_from_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_config(monkeypatch, tmp_path, PROVIDERS_TOML)
    monkeypatch.setenv("LLM_PROVIDER", "local")
    monkeypatch.setenv("LOCAL_LLM_KEY", f"\n{SECRET}\n")
    resolved = load_settings().llm()
    assert resolved is not None
    assert resolved.name == "local"
    assert resolved.base_url == "http://127.0.0.1:11434/v1"
    assert resolved.model == "qwen2.5:7b"
    assert resolved.api_key is not None
    assert resolved.api_key.get_secret_value() == SECRET
    assert resolved.context_window == 65536
    assert resolved.max_retries == 0  # an explicit 0 is kept, not replaced by the default 2


def test_env_model_overrides_named_provider(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(monkeypatch, tmp_path, PROVIDERS_TOML)
    monkeypatch.setenv("LLM_PROVIDER", "local")
    monkeypatch.setenv("LLM_MODEL", "llama3.1:8b")
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:8080/v1/")
    resolved = load_settings().llm()
    assert resolved is not None
    assert resolved.name == "local"
    assert resolved.model == "llama3.1:8b"
    assert resolved.base_url == "http://127.0.0.1:8080/v1"
    assert resolved.context_window == 65536  # the rest still comes from the provider


def test_provider_key_with_inner_whitespace_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(monkeypatch, tmp_path, PROVIDERS_TOML)
    monkeypatch.setenv("LLM_PROVIDER", "local")
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-live-9f8e\n7d6c5b4a")
    msg = settings_error()
    assert "LOCAL_LLM_KEY" in msg
    assert "9f8e" not in msg and "7d6c5b4a" not in msg


def test_provider_bad_base_url_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_config(monkeypatch, tmp_path, '[providers.p]\nbase_url = "127.0.0.1:1/v1"\nmodel = "m"\n')
    monkeypatch.setenv("LLM_PROVIDER", "p")
    assert "providers.p.base_url" in settings_error()


def test_provider_unknown_key_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_config(monkeypatch, tmp_path, '[providers.p]\nmodel = "m"\napi_key = "inline"\n')
    msg = settings_error()
    assert "providers" in msg
    assert "p.api_key" in msg


def test_unknown_provider_lists_known_ones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_config(monkeypatch, tmp_path, PROVIDERS_TOML)
    monkeypatch.setenv("LLM_PROVIDER", "deepseek")
    msg = settings_error()
    assert "LLM_PROVIDER" in msg
    assert "'deepseek'" in msg
    assert "local, other" in msg


def test_unknown_provider_without_any_defined(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "deepseek")
    assert "none defined" in settings_error()


def test_invalid_config_toml_is_a_settings_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write_config(monkeypatch, tmp_path, "llm_model = \n[providers.x\n")
    msg = settings_error()
    assert str(path) in msg
    assert "TOML" in msg


# --- sources and precedence -----------------------------------------------------------------------


def test_dotenv_in_cwd_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        "LLM_BASE_URL=http://127.0.0.1:7/v1/\nLLM_MODEL=dotenv-model\n"
        f"LLM_API_KEY={SECRET}\nTHREADLINE_DATA_DIR=from-dotenv\n"
    )
    settings = load_settings()
    resolved = settings.llm()
    assert resolved is not None
    assert resolved.model == "dotenv-model"
    assert resolved.base_url == "http://127.0.0.1:7/v1"
    assert resolved.api_key is not None and resolved.api_key.get_secret_value() == SECRET
    assert settings.data_dir == Path("from-dotenv")


def test_dotenv_secret_with_inner_space_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text('LLM_MODEL=m\nLLM_API_KEY="sk-live-9f8e 7d6c5b4a"\n')
    msg = settings_error()
    assert "LLM_API_KEY" in msg
    assert "9f8e" not in msg


def test_precedence_env_over_dotenv_over_toml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(
        monkeypatch,
        tmp_path,
        'llm_model = "toml-model"\npersona = "toml-persona"\nlog_level = "ERROR"\n',
    )
    (tmp_path / ".env").write_text("LLM_MODEL=dotenv-model\nTHREADLINE_PERSONA=dotenv-persona\n")
    monkeypatch.setenv("LLM_MODEL", "env-model")

    settings = load_settings()
    assert settings.llm_model == "env-model"  # env beats .env and TOML
    assert settings.persona == "dotenv-persona"  # .env beats TOML
    assert settings.log_level == "ERROR"  # TOML beats the default

    monkeypatch.delenv("LLM_MODEL")
    assert load_settings().llm_model == "dotenv-model"

    (tmp_path / ".env").unlink()
    settings = load_settings()
    assert settings.llm_model == "toml-model"
    assert settings.persona == "toml-persona"


def test_explicit_arguments_beat_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THREADLINE_MAX_MESSAGE_CHARS", "100")
    assert load_settings().max_message_chars == 100
    assert load_settings(max_message_chars=7).max_message_chars == 7


def test_threadline_env_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    monkeypatch.setenv("THREADLINE_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("THREADLINE_POLICY", str(policy))
    monkeypatch.setenv("DATABASE_URL", "  postgresql://u@127.0.0.1:5432/db  ")
    settings = load_settings()
    assert settings.data_dir == tmp_path / "d"
    assert settings.policy_file == policy
    assert settings.database_url == "postgresql://u@127.0.0.1:5432/db"
    assert settings.database == "postgresql://u@127.0.0.1:5432/db"


def test_bad_number_names_the_threadline_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THREADLINE_MAX_MESSAGE_CHARS", "lots")
    assert "THREADLINE_MAX_MESSAGE_CHARS" in settings_error()


# --- defaults ---------------------------------------------------------------------------------


def test_database_defaults_to_sqlite_under_data_dir(tmp_path: Path) -> None:
    settings = load_settings()
    assert settings.database_url is None
    assert settings.data_dir == Path("data")
    # The autouse fixture chdirs into tmp_path, so the relative data dir resolves there.
    assert settings.database == f"sqlite:///{(tmp_path / 'data').resolve() / 'threadline.db'}"


def test_database_default_follows_data_dir(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "elsewhere")
    assert settings.database == f"sqlite:///{(tmp_path / 'elsewhere').resolve()}/threadline.db"


def test_blank_database_url_falls_back_to_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "  ")
    settings = load_settings()
    assert settings.database_url is None
    assert settings.database.startswith("sqlite:///")


def test_other_defaults() -> None:
    settings = load_settings()
    assert settings.policy_file == DEFAULT_POLICY_FILE
    assert settings.max_message_chars == 20_000
    assert settings.tool_max_args_chars == 4_000


def test_provider_name_is_trimmed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    write_config(monkeypatch, tmp_path, PROVIDERS_TOML)
    monkeypatch.setenv("LLM_PROVIDER", " other\n")
    resolved = load_settings().llm()
    assert resolved is not None
    assert (resolved.name, resolved.model) == ("other", "other-model")


def test_a_named_settings_file_that_does_not_exist_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("THREADLINE_CONFIG", str(missing))
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert str(missing) in str(err.value)
    assert "THREADLINE_CONFIG" in str(err.value)


def test_an_upper_case_scheme_is_accepted_and_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_BASE_URL", " HTTP://127.0.0.1:11434/v1/ ")
    monkeypatch.setenv("LLM_MODEL", "m")
    resolved = load_settings().llm()
    assert resolved is not None
    assert resolved.base_url == "http://127.0.0.1:11434/v1"


def test_code_search_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.embeddings_provider == "local" and settings.qdrant_url is None

    monkeypatch.setenv("EMBEDDINGS_PROVIDER", "openai")
    msg = settings_error()
    assert "EMBEDDINGS_PROVIDER=openai needs EMBEDDINGS_URL, EMBEDDINGS_MODEL" in msg
    monkeypatch.setenv("EMBEDDINGS_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.setenv("EMBEDDINGS_MODEL", "nomic-embed-text")
    monkeypatch.setenv("EMBEDDINGS_DIMENSION", "768")
    monkeypatch.setenv("QDRANT_URL", " http://127.0.0.1:6333/ ")
    settings = load_settings()
    assert settings.embeddings_url == "http://127.0.0.1:11434/v1"
    assert settings.qdrant_url == "http://127.0.0.1:6333"

    monkeypatch.setenv("EMBEDDINGS_PROVIDER", "fasttext")
    assert "embeddings_provider" in settings_error().lower()
    monkeypatch.setenv("EMBEDDINGS_PROVIDER", "local")
    monkeypatch.setenv("QDRANT_API_KEY", "key with space")
    msg = settings_error()
    assert "QDRANT_API_KEY" in msg and "key with space" not in msg


# --- secrets: printable ASCII only ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "DISCORD_TOKEN",
        "EMBEDDINGS_API_KEY",
        "QDRANT_API_KEY",
    ],
)
def test_every_token_setting_refuses_non_ascii(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "tok-zq9\u200bvx7")
    msg = settings_error()
    assert name in msg
    assert "zq9" not in msg and "vx7" not in msg


def test_provider_key_from_api_key_env_refuses_non_ascii(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(monkeypatch, tmp_path, PROVIDERS_TOML)
    monkeypatch.setenv("LLM_PROVIDER", "local")
    monkeypatch.setenv("LOCAL_LLM_KEY", "sk-live-9f8e\u00a07d6c5b4a\u200b")
    msg = settings_error()
    assert "LOCAL_LLM_KEY" in msg
    assert "9f8e" not in msg and "7d6c5b4a" not in msg


# --- the settings file: unknown keys, strict types, unreadable files ----------------------------


def test_unknown_key_in_the_settings_file_is_refused_with_the_closest_valid_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write_config(monkeypatch, tmp_path, "llm_context_windw = 65536\n")
    msg = settings_error()
    assert "llm_context_windw" in msg
    assert "llm_context_window" in msg.replace("llm_context_windw", "")  # the suggestion
    assert str(path) in msg


def test_unknown_key_far_from_any_valid_one_is_refused_without_a_guess(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(monkeypatch, tmp_path, 'favourite_colour = "blue"\n')
    msg = settings_error()
    assert "favourite_colour" in msg
    assert "did you mean" not in msg


def test_every_setting_and_its_threadline_name_is_a_valid_settings_file_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(
        monkeypatch,
        tmp_path,
        'data_dir = "d1"\nrequest_deadline = 30\nllm_context_window = 65536\n'
        "LLM_MAX_RETRIES = 1\nthreadline_max_message_chars = 500\ndemo_index = false\n"
        'discord_upload_limit = "8MB"\ndiscord_guild_ids = [1, 2]\n'
        '[providers.p]\nmodel = "m"\n',
    )
    settings = load_settings()
    assert settings.data_dir == Path("d1")
    assert settings.request_deadline == 30.0
    assert settings.llm_context_window == 65536
    assert settings.llm_max_retries == 1  # keys are matched without regard to case, as before
    assert settings.max_message_chars == 500
    assert settings.demo_index is False
    assert settings.discord_upload_limit == 8 * 1024 * 1024
    assert settings.discord_guild_ids == (1, 2)


def test_unknown_keys_elsewhere_are_still_ignored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The environment and .env hold plenty of variables that are not Threadline's.
    monkeypatch.setenv("LLM_CONTEXT_WINDW", "5")
    (tmp_path / ".env").write_text("SOMETHING_ELSE=1\n")
    assert load_settings().llm_context_window == 32_768


def test_provider_unknown_key_suggests_the_closest_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(monkeypatch, tmp_path, '[providers.p]\nmodel = "m"\ncontext_windw = 8192\n')
    msg = settings_error()
    assert "p.context_windw" in msg
    assert "context_window" in msg.replace("context_windw", "")


@pytest.mark.parametrize(
    ("text", "key", "kind"),
    [
        ("llm_context_window = true\n", "llm_context_window", "a boolean"),
        ("max_message_chars = false\n", "max_message_chars", "a boolean"),
        ("request_deadline = true\n", "request_deadline", "a boolean"),
        ('llm_context_window = "65536"\n', "llm_context_window", "a string"),
        ("llm_context_window = 65536.5\n", "llm_context_window", "a float"),
        ("demo_index = 1\n", "demo_index", "an integer"),
        ('demo_index = "yes"\n', "demo_index", "a string"),
        ("[providers.p]\ncontext_window = true\n", "p.context_window", "a boolean"),
        ("[providers.p]\ntimeout = true\n", "p.timeout", "a boolean"),
        ('[providers.p]\nmax_retries = "3"\n', "p.max_retries", "a string"),
    ],
)
def test_settings_file_values_must_have_the_right_toml_type(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, key: str, kind: str
) -> None:
    # `true` used to become 1 (and a misleading "must be at least 1024"); TOML values are typed.
    write_config(monkeypatch, tmp_path, text)
    msg = settings_error()
    assert key in msg
    assert kind in msg


def test_numbers_in_the_settings_file_may_be_written_as_toml_numbers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(monkeypatch, tmp_path, "llm_timeout = 30\nllm_compact_threshold = 0.8\n")
    settings = load_settings()
    assert (settings.llm_timeout, settings.llm_compact_threshold) == (30.0, 0.8)


def test_environment_numbers_are_still_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_CONTEXT_WINDOW", "65536")
    monkeypatch.setenv("THREADLINE_DEMO_INDEX", "false")
    settings = load_settings()
    assert settings.llm_context_window == 65536
    assert settings.demo_index is False


def test_a_settings_file_that_is_not_utf8_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('persona = "caf\xe9"\n'.encode("latin-1"))
    monkeypatch.setenv("THREADLINE_CONFIG", str(path))
    msg = settings_error()
    assert str(path) in msg
    assert "UTF-8" in msg


def test_a_dotenv_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(
        f"LLM_API_KEY={SECRET}\nTHREADLINE_PERSONA=caf\xe9\n".encode("latin-1")
    )
    msg = settings_error()
    assert ".env" in msg
    assert "UTF-8" in msg
    assert SECRET not in msg


def test_a_settings_file_that_is_a_directory_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("THREADLINE_CONFIG", str(tmp_path))
    msg = settings_error()
    assert str(tmp_path) in msg
    assert "is a directory" in msg
    assert "does not exist" not in msg


def test_voice_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.tts_engine_resolved == "piper"  # local and offline by default
    assert (settings.tts_max_chars, settings.tts_segment_bytes, settings.tts_workers) == (
        3_000,
        600,
        2,
    )
    assert settings.tts_voice is None and settings.tts_format == "auto"

    monkeypatch.setenv("TTS_BASE_URL", "http://127.0.0.1:8880/v1/")
    settings = load_settings()
    assert settings.tts_engine_resolved == "openai"
    assert settings.tts_base_url == "http://127.0.0.1:8880/v1"
    monkeypatch.setenv("TTS_ENGINE", "espeak")
    monkeypatch.setenv("TTS_VOICE", "  de  ")
    settings = load_settings()
    assert (settings.tts_engine_resolved, settings.tts_voice) == ("espeak", "de")

    monkeypatch.delenv("TTS_BASE_URL")
    monkeypatch.setenv("TTS_ENGINE", "openai")
    assert "TTS_ENGINE=openai needs TTS_BASE_URL" in settings_error()
    monkeypatch.setenv("TTS_ENGINE", "festival")
    assert "tts_engine" in settings_error().lower()
    monkeypatch.setenv("TTS_ENGINE", "auto")
    monkeypatch.setenv("TTS_SEGMENT_BYTES", "8")
    assert "tts_segment_bytes" in settings_error().lower()
    monkeypatch.delenv("TTS_SEGMENT_BYTES")
    monkeypatch.setenv("TTS_API_KEY", "sk secret")
    msg = settings_error()
    assert "TTS_API_KEY" in msg and "sk secret" not in msg


def test_the_database_pool_is_bounded_and_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert (settings.database_pool_size, settings.database_max_overflow) == (15, 5)  # 20 in all
    monkeypatch.setenv("DATABASE_POOL_SIZE", "3")
    monkeypatch.setenv("DATABASE_MAX_OVERFLOW", "0")
    settings = load_settings()
    assert (settings.database_pool_size, settings.database_max_overflow) == (3, 0)
    monkeypatch.setenv("DATABASE_POOL_SIZE", "0")
    with pytest.raises(SettingsError, match="DATABASE_POOL_SIZE"):
        load_settings()
