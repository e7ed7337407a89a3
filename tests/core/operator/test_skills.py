"""The console's skills view (core.operator.skills): where the policy offers each skill in one
tenant, asked of the policy itself, and what the library refused."""

from __future__ import annotations

from pathlib import Path

from core.operator.skills import SkillsView
from core.policy import Policy
from core.skills.library import SkillLibrary
from tests.support.console_pages import write_skills

POLICY = Policy.from_dict(
    {
        "defaults": {"permissions": ["ask"], "skills": ["triage"]},
        "rules": [
            {"name": "ops", "match": {"roles": ["ops"]}, "grant": ["skills.use"]},
            {
                "name": "deployers",
                "match": {"tenant": ["T1"], "user": ["ada"]},
                "grant": ["skills.use"],
                "skills": ["*"],
                "pinned_skills": ["deploy"],
            },
            {"name": "elsewhere", "match": {"tenant": ["T2"]}, "grant": ["skills.use"]},
        ],
    }
)


def _view(tmp_path: Path) -> SkillsView:
    library = SkillLibrary([write_skills(tmp_path / "skills")], shipped=None)
    library.load()
    return SkillsView(library, POLICY)


def test_where_each_skill_is_offered_in_a_tenant(tmp_path: Path) -> None:
    page = _view(tmp_path).page("slack", "T1")
    offers = {
        s.name: [(o.where, o.offered, o.pinned, o.source) for o in s.offers] for s in page.skills
    }
    # No skills.use by default: offered only where a rule grants it, and deploy only to Ada.
    assert offers["deploy"] == [
        ("elsewhere", False, False, "defaults"),
        ("roles ops", False, False, "ops"),
        ("user ada", True, True, "deployers"),
    ]
    assert offers["triage"] == [
        ("elsewhere", False, False, "defaults"),
        ("roles ops", True, False, "ops"),
        ("user ada", True, False, "deployers"),
    ]
    # In T2 a tenant-wide rule grants skills.use: triage is everywhere, deploy nowhere.
    t2 = {s.name: s.offers for s in _view(tmp_path / "t2").page("slack", "T2").skills}
    assert [(o.where, o.offered) for o in t2["triage"]] == [("everywhere", True)]
    assert not any(o.offered for o in t2["deploy"])


def test_problems_refused_files_and_the_search(tmp_path: Path) -> None:
    page = _view(tmp_path).page("slack", "T1")
    assert page.loaded == 2 and len(page.problems) == 1 and "broken/SKILL.md" in page.problems[0]
    deploy = next(s for s in page.skills if s.name == "deploy")
    assert deploy.files == ("references/rollback.md",)
    assert any("prod.pem looks like it holds secrets" in p for p in deploy.problems)
    assert str(tmp_path) not in " ".join(page.problems + deploy.problems)
    found = _view(tmp_path / "again").page("slack", "T1", search="ROLLBACK")
    assert found.skills == ()  # the search reads names and descriptions, not files
    assert [s.name for s in _view(tmp_path / "q").page("slack", "T1", "step by").skills] == [
        "deploy"
    ]
