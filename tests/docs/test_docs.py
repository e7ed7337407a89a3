"""The docs site's configuration reference: generated from the settings, so none is undocumented."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from config.settings import ProviderSettings, Settings
from core.mcp.config import McpServerSettings
from tests.support.paths import ROOT_DIR

DOCS = ROOT_DIR / "docs"


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    # docs/ is not a package: the hook file is loaded by path, as mkdocs loads it.
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_setting_has_a_description(hooks: ModuleType) -> None:
    assert hooks.missing_descriptions() == []


def test_the_mcp_key_docs_name_only_real_keys(hooks: ModuleType) -> None:
    assert set(hooks.MCP_KEYS) <= set(McpServerSettings.model_fields)
    assert set(hooks.SHOWN_DEFAULTS) <= set(Settings.model_fields)


def test_the_reference_lists_every_environment_name(hooks: ModuleType) -> None:
    page = hooks.settings_reference()
    for name, field in Settings.model_fields.items():
        if name in ("providers", "mcp"):
            continue
        env = hooks.env_name(name, field)
        assert f"| `{env}` |" in page, env
    for extra in ("THREADLINE_CONFIG", "PORT"):
        assert f"| `{extra}` |" in page, extra
    for key in ProviderSettings.model_fields:
        assert f"| `{key}` |" in page, key
    for key in McpServerSettings.model_fields:
        assert f"| `{key}` |" in page, key


def test_environment_names_are_the_ones_settings_read(hooks: ModuleType) -> None:
    fields = Settings.model_fields
    assert hooks.env_name("data_dir", fields["data_dir"]) == "THREADLINE_DATA_DIR"
    assert hooks.env_name("log_format", fields["log_format"]) == "LOG_FORMAT"
    assert hooks.env_name("llm_model", fields["llm_model"]) == "LLM_MODEL"


def test_the_configuration_page_carries_the_marker(hooks: ModuleType) -> None:
    assert hooks.MARKER in (DOCS / "configuration.md").read_text(encoding="utf-8")


def test_the_readme_stays_a_front_door() -> None:
    readme = DOCS.parent / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 300
