"""The console's policy page over HTTP: the rules of the operator's tenant as loaded, the
explainer's answers and its checks of what was typed, and who may see it."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.console import WEB_SECRET, shown, sign_in
from tests.support.console_pages import POLICY, XSS


@pytest.fixture
def console_bot(
    make_bot: Callable[..., BotHarness], clock: Clock, write_policy: Callable[[str], Path]
) -> BotHarness:
    return make_bot(
        clock=clock, console=True, console_secret=WEB_SECRET, policy_file=write_policy(POLICY)
    )


def _row(page: str, row_id: str) -> str:
    found = re.search(rf'<tr id="{row_id}">(.*?)</tr>', page, re.S)
    assert found is not None, row_id
    return found.group(1)


async def test_rules_of_the_tenant_only_and_names_as_text(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    await sign_in(web, console_bot, tenant="acme", user="ada")
    page = await web.get("/console/policy")
    assert page.status_code == 200
    rules = page.text.split('id="policy-rules"')[1]
    for name in ("defaults", "admins", "ops may use the test server", "help desk looks"):
        assert name in rules
    assert "channel ops" in rules and "tokens per user per day: 500,000" in rules
    # The other tenant's rule is counted, not shown.
    assert "globex" not in shown(page.text) and "1 rule(s) for other tenants" in page.text
    assert "<script>alert(1)" not in page.text and "<img src=x" not in page.text
    assert html.escape(XSS, quote=False) in page.text or "&lt;script&gt;alert(1)" in page.text
    # The form starts as the operator themself, and explains nothing until asked.
    assert 'name="user" value="ada"' in page.text and 'id="explanation"' not in page.text


async def test_the_explainer_names_the_rule_behind_each_grant(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    await sign_in(web, console_bot, tenant="acme", user="ada")
    page = await web.get(
        "/console/policy", params={"channel": "ops", "user": "bob", "roles": "dev, admin"}
    )
    assert page.status_code == 200 and 'id="explanation"' in page.text
    text = page.text
    assert "For bob in ops with admin, dev" in text
    # ask from the defaults; admin from the admins rule; mcp:t from the ops rule.
    assert re.search(r"<code>ask</code></td><td><span class=\"msp-source\">defaults</span>", text)
    assert re.search(r"<code>admin</code></td><td><span class=\"msp-source\">admins</span>", text)
    assert "ops may use the test server" in _row(text, "explained-skills")
    assert "<code>deploy</code>" in _row(text, "explained-pinned")
    assert "the default model" in _row(text, "explained-model")
    budgets = text.split('id="explained-budgets"')[1].split("</table>")[0]
    assert "500,000" in budgets and "ops may use the test server" in budgets
    mcp = re.findall(r'<tr class="msp-mcp-grant">(.*?)</tr>', text, re.S)
    assert len(mcp) == 1 and "mcp:t" in mcp[0] and "ops may use the test server" in mcp[0]

    # In the help channel skills.use is denied, and the grant is one tool.
    help_page = (
        await web.get("/console/policy", params={"channel": "help", "user": "bob", "roles": ""})
    ).text
    assert "skills.use" in help_page and "msp-denied" in help_page
    assert "none offered" in _row(help_page, "explained-skills")
    assert "mcp:t.lookup" in help_page


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"channel": "", "user": "bob"}, "Give a channel."),
        ({"channel": "ops", "user": "x" * 129}, "longer than 128"),
        ({"channel": "<script>", "user": "bob"}, "The channel may hold only"),
        ({"channel": "ops", "user": "bob", "roles": "a,b c"}, "Roles may hold only"),
        ({"channel": "ops", "user": "bob", "roles": ",".join("r" * 21)}, "at most 20 roles"),
    ],
)
async def test_the_explainer_checks_what_was_typed(
    web: httpx.AsyncClient, console_bot: BotHarness, query: dict[str, str], message: str
) -> None:
    await sign_in(web, console_bot, tenant="acme", user="ada")
    page = await web.get("/console/policy", params=query)
    assert page.status_code == 400
    assert message in page.text and 'id="explanation"' not in page.text
    assert "<script>" not in page.text  # what was typed comes back as text


async def test_only_signed_in_admins_see_it(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    resp = await web.get("/console/policy")
    assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"
    # Another tenant's admin sees their own rule, none of acme's.
    await sign_in(web, console_bot, tenant="globex", user="gus")
    page = await web.get("/console/policy")
    assert "globex secret plans" in page.text
    assert "ops may use the test server" not in page.text and "mallory" not in shown(page.text)
    assert "4 rule(s) for other tenants" in page.text
    # The platform and tenant are the operator's own, whatever the query says.
    asked = await web.get(
        "/console/policy",
        params={"channel": "ops", "user": "bob", "tenant": "acme", "platform": "slack"},
    )
    assert "ops may use the test server" not in asked.text.split('id="rules"')[0]
    assert "For bob in ops" in asked.text
