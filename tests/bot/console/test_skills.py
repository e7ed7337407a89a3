"""The console's skills page over HTTP: the library with references, the problems found on
load, where the policy offers each skill in the operator's tenant, the search, and who may see
it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import BotHarness
from tests.support.clocks import Clock
from tests.support.console import WEB_SECRET, sign_in
from tests.support.console_pages import POLICY, write_skills


@pytest.fixture
def console_bot(
    make_bot: Callable[..., BotHarness],
    clock: Clock,
    write_policy: Callable[[str], Path],
    tmp_path: Path,
) -> BotHarness:
    return make_bot(
        clock=clock,
        console=True,
        console_secret=WEB_SECRET,
        policy_file=write_policy(POLICY),
        skills_dirs=(write_skills(tmp_path / "team-skills"),),
    )


def _skill(page: str, name: str) -> str:
    found = re.search(rf'<tr id="skill-{name}">(.*?)</tr>', page, re.S)
    assert found is not None, name
    return found.group(1)


async def test_the_library_its_problems_and_where_each_skill_is_offered(
    web: httpx.AsyncClient, console_bot: BotHarness
) -> None:
    assert (await console_bot.send("/skills", tenant="acme", channel="ops")).ok  # loads them
    await sign_in(web, console_bot, tenant="acme", user="ada")
    page = await web.get("/console/skills")
    assert page.status_code == 200
    # The skill that did not load, without the server's absolute paths.
    problems = page.text.split('id="skill-problems"')[1].split("</ul>")[0]
    assert "broken/SKILL.md" in problems and "frontmatter" in problems
    assert str(Path("/tmp")) not in problems and "team-skills" not in problems
    assert 'id="skill-broken"' not in page.text

    deploy = _skill(page.text, "deploy")
    assert "How we deploy the API" in deploy and "references/rollback.md" in deploy
    assert "listed first in ops" in deploy  # the skill's own hint
    assert "references/prod.pem looks like it holds secrets" in deploy  # refused, not listed
    assert "<code>references/prod.pem</code>" not in deploy
    # Offered (and pinned) in ops, whose rule lists it; not in help (skills.use denied);
    # elsewhere the defaults offer every skill.
    assert re.search(r"channel ops: offered, pinned", deploy)
    assert re.search(r"channel help: not offered", deploy)
    assert re.search(r"elsewhere: offered", deploy)

    triage = _skill(page.text, "triage")
    assert "&lt;script&gt;alert(3)" in triage and "<script>" not in page.text
    assert "colour" in triage  # the warning about the unknown key, with the skill
    assert re.search(r"channel ops: not offered", triage)
    assert re.search(r"elsewhere: offered", triage)


async def test_everywhere_and_the_search(web: httpx.AsyncClient, console_bot: BotHarness) -> None:
    # globex's rules say nothing about skills: the defaults offer every skill everywhere.
    await sign_in(web, console_bot, tenant="globex", user="gus")
    page = await web.get("/console/skills")
    assert '<li class="ok">everywhere</li>' in _skill(page.text, "deploy")
    assert "channel ops" not in page.text and "help desk" not in page.text  # acme's rules

    found = await web.get("/console/skills", params={"q": "INCIDENT"})
    assert 'id="skill-triage"' in found.text and 'id="skill-deploy"' not in found.text
    assert "Library (1 of 2)" in found.text
    none = await web.get("/console/skills", params={"q": "nothing like it"})
    assert "No skill's name or description holds “nothing like it”" in none.text
    long = await web.get("/console/skills", params={"q": "x" * 65})
    assert long.status_code == 400 and "at most 64 characters" in long.text


async def test_only_signed_in_admins_see_it(web: httpx.AsyncClient) -> None:
    resp = await web.get("/console/skills")
    assert resp.status_code == 303 and resp.headers["location"] == "/console/signin"
