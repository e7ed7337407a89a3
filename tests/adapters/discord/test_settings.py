"""Discord settings (config/settings.py): guild ids, upload limit, sharding; errors name the
variable."""

from __future__ import annotations

import pytest

from adapters.discord.client import DiscordConfig
from config.settings import DEFAULT_DISCORD_UPLOAD_LIMIT, SettingsError, load_settings


def test_defaults_are_one_connection_global_commands_and_10_mb() -> None:
    settings = load_settings()
    assert settings.discord_guild_ids == ()
    assert settings.discord_upload_limit == DEFAULT_DISCORD_UPLOAD_LIMIT == 10 * 1024 * 1024
    assert settings.discord_shard_count is None and settings.discord_shard_ids == ()


def test_values_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "t0ken")
    monkeypatch.setenv("DISCORD_GUILD_IDS", " 111, 222 ,")
    monkeypatch.setenv("DISCORD_UPLOAD_LIMIT", "25MB")
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "4")
    monkeypatch.setenv("DISCORD_SHARD_IDS", "2,3")

    config = DiscordConfig.from_settings(load_settings())

    assert config.guild_ids == (111, 222)
    assert config.upload_limit == 25 * 1024 * 1024
    assert config.sharded and config.shards == "4" and config.shard_ids == (2, 3)
    assert not config.syncs_commands  # shard 0 runs elsewhere: that process syncs


@pytest.mark.parametrize(
    ("raw", "size"), [("1048576", 1_048_576), ("512 KB", 524_288), ("8mib", 8_388_608)]
)
def test_upload_limit_units(monkeypatch: pytest.MonkeyPatch, raw: str, size: int) -> None:
    monkeypatch.setenv("DISCORD_UPLOAD_LIMIT", raw)
    assert load_settings().discord_upload_limit == size


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("DISCORD_GUILD_IDS", "123,abc"),
        ("DISCORD_UPLOAD_LIMIT", "ten megabytes"),
        ("DISCORD_UPLOAD_LIMIT", "0"),
        ("DISCORD_SHARD_COUNT", "many"),
        ("DISCORD_SHARD_COUNT", "0"),
        ("DISCORD_SHARDS", "many"),
    ],
)
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, name: str, raw: str) -> None:
    monkeypatch.setenv(name, raw)
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert name in str(info.value)


def test_shard_ids_need_a_count_they_fit_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_SHARD_IDS", "0")
    with pytest.raises(
        SettingsError, match="DISCORD_SHARD_IDS needs a numeric DISCORD_SHARD_COUNT"
    ):
        load_settings()
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "2")
    monkeypatch.setenv("DISCORD_SHARD_IDS", "1,2")
    with pytest.raises(SettingsError, match=r"below DISCORD_SHARD_COUNT \(2\)"):
        load_settings()


def test_the_older_name_discord_shards_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "t0ken")
    monkeypatch.setenv("DISCORD_SHARDS", "2")
    monkeypatch.setenv("DISCORD_SHARD_IDS", "1")
    settings = load_settings()
    assert settings.discord_shard_count == settings.discord_shards == "2"
    config = DiscordConfig.from_settings(settings)
    assert (config.shards, config.shard_ids) == ("2", (1,))
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "02")  # the same count, written differently
    assert load_settings().discord_shard_count == "2"


def test_both_shard_count_names_disagreeing_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_SHARD_COUNT", "4")
    monkeypatch.setenv("DISCORD_SHARDS", "auto")
    with pytest.raises(SettingsError) as info:
        load_settings()
    message = str(info.value)
    assert "DISCORD_SHARD_COUNT=4 and DISCORD_SHARDS=auto disagree" in message
    assert "set only DISCORD_SHARD_COUNT" in message


def test_the_token_is_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "very-secret-token")
    settings = load_settings()
    assert "very-secret-token" not in repr(settings)
    assert "very-secret-token" not in repr(DiscordConfig.from_settings(settings))
