"""The console's view of the skills library: each skill, its files, the problems the library
found on load, and where the policy offers it in one tenant.

Where a skill is offered is the policy's decision (`skills.use` and the `skills` allowlist,
resolved like everything else). The page cannot list every identity, so it asks the policy about
one representative of each place a rule singles out: someone in a rule's channel, with its
role, or that user (nothing else about them); and someone no such rule names ("elsewhere").
Those answers come from `Policy.resolve` itself, so they are exact for the people they
describe; someone matched by two such rules at once may get a third answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.operator.policy import applies_in, describe_match
from core.policy import ALL_SKILLS, Identity, Match, Policy, Rule, rule_label
from core.skills.library import SkillLibrary

# Stands for "a channel (user, ...) no rule names": rules match by equality, and no platform
# id holds a NUL.
_NOBODY = "\x00"
USE = "skills.use"


@dataclass(frozen=True, slots=True)
class Offer:
    where: str  # "everywhere", "elsewhere", or a rule's match ("channel ops · roles admin")
    offered: bool
    pinned: bool  # given in full up front there
    source: str  # the rule whose place this is; "defaults" for everywhere/elsewhere


@dataclass(frozen=True, slots=True)
class SkillRow:
    name: str
    description: str
    folder: str  # relative to its skills folder (absolute paths name the server's layout)
    shipped: bool  # one of Threadline's examples
    files: tuple[str, ...]  # what read_skill_file hands out (the references)
    allowed_tools: tuple[str, ...] | None
    hinted_channels: tuple[str, ...]  # the skill's own `channels` hint: listed first there
    offers: tuple[Offer, ...]  # one "everywhere" row, or where it is and is not offered
    problems: tuple[str, ...]  # warnings about its SKILL.md (it loaded), files refused


@dataclass(frozen=True, slots=True)
class SkillsPage:
    skills: tuple[SkillRow, ...]
    problems: tuple[str, ...]  # errors: skills that did not load, folders that could not be read
    folders: int
    loaded: int  # every skill loaded (`skills` may be a search's)


def _touches_skills(rule: Rule) -> bool:
    return (
        rule.skills is not None
        or rule.pinned_skills is not None
        or USE in rule.grant
        or USE in rule.deny
    )


def _representative(match: Match, platform: str, tenant: str) -> Identity:
    """Someone of this tenant the match names and nothing else does (if no other rule names
    the same values)."""
    return Identity(
        platform=platform,
        tenant=tenant,
        channel=match.channel[0] if match.channel else _NOBODY,
        user=match.user[0] if match.user else _NOBODY,
        roles=frozenset(match.roles[:1]) if match.roles else frozenset(),
    )


class SkillsView:
    def __init__(self, library: SkillLibrary, policy: Policy) -> None:
        self._library = library
        self._policy = policy

    def page(self, platform: str, tenant: str, search: str = "") -> SkillsPage:
        """The library as loaded (call after the library has loaded: `Skills.ready()`); with
        `search`, only the skills whose name or description holds it (any case)."""
        lib = self._library
        needle = search.strip().casefold()
        warnings: dict[str, list[str]] = {}
        errors: list[str] = []
        skills = lib.all()
        by_folder = {s.folder: s.name for s in skills}
        for problem in lib.problems():
            owner = by_folder.get(problem.path.parent.resolve())
            if owner is not None and not problem.error:
                warnings.setdefault(owner, []).append(lib.describe(problem))
            else:
                errors.append(lib.describe(problem))
        places = self._places(platform, tenant)
        rows = tuple(
            SkillRow(
                name=s.name,
                description=s.description,
                folder=lib.relative(s.folder),
                shipped=s.shipped,
                files=s.files,
                allowed_tools=s.allowed_tools,
                hinted_channels=tuple(sorted(s.channels)),
                offers=self._offers(s.name, places),
                problems=(*warnings.get(s.name, ()), *(why for _, why in s.refused)),
            )
            for s in skills
            if needle in s.name.casefold() or needle in s.description.casefold()
        )
        return SkillsPage(rows, tuple(errors), len(lib.folders), len(skills))

    def _places(self, platform: str, tenant: str) -> list[tuple[str, str, Identity]]:
        """(where, source, representative): elsewhere first, then each rule of this tenant
        that decides something about skills."""
        places = [
            (
                "elsewhere",
                "defaults",
                Identity(platform, tenant, _NOBODY, _NOBODY, frozenset()),
            )
        ]
        for i, rule in enumerate(self._policy.document.rules):
            if _touches_skills(rule) and applies_in(rule.match, platform, tenant):
                rep = _representative(rule.match, platform, tenant)
                where = describe_match(rule.match, within_tenant=True)
                places.append((where, rule_label(i, rule), rep))
        return places

    def _offers(self, name: str, places: list[tuple[str, str, Identity]]) -> tuple[Offer, ...]:
        offers = []
        for where, source, who in places:
            grant = self._policy.resolve(who)
            offered = USE in grant.permissions and (
                ALL_SKILLS in grant.skills or name in grant.skills
            )
            offers.append(Offer(where, offered, offered and name in grant.pinned_skills, source))
        if all(o.offered for o in offers) and not any(o.pinned for o in offers):
            return (Offer("everywhere", True, False, "defaults"),)
        return tuple(offers)
