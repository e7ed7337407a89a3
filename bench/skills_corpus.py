"""A corpus of 200 team skills and the chat messages that need them, for the skills index bench.

The skills index benchmark asks one question: when a user writes a message, is the skill written
for it among the skills listed in the index the agent sees (name + description, under a token
budget)? This module writes the corpus that question is asked over:

- 200 distinct `NAME/SKILL.md` files (valid agent-skills frontmatter: `name`, `description`,
  `metadata`, sometimes `allowed-tools`; a short Markdown body), realistic engineering-team
  playbooks across many areas. Several are deliberately close to each other
  (`postgres-migration` / `mysql-schema-change`, `ios-release` / `android-release`,
  `incident-comms` / `outage-triage` / `status-page-update`, `secret-rotation` /
  `leaked-secret-response`, ...) so that ranking is tested honestly.
- the queries: chat messages a user would send to the bot, each written for exactly one skill,
  mostly paraphrasing rather than repeating the description's words. They are returned and
  written to `queries.json` as a list of `{"text", "skill"}`.

Everything comes from the hand-written tables below; the seed only decides presentation
(metadata owner and version, the order of body steps that have no natural order, the order of
`queries.json`), so every seed gives the same skills and the same queries.

    .venv/bin/python bench/skills_corpus.py DIR [--seed 0]

None of the names equal a skill shipped in Threadline's own `skills/` folder, so the corpus can
be loaded next to the examples without one shadowing the other.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Query:
    """A chat message written for one skill."""

    text: str
    skill: str


@dataclass(frozen=True)
class SkillSpec:
    name: str
    area: str
    description: str
    queries: tuple[str, ...]


# -- per-area body material ---------------------------------------------------------------------

# Steps each area's playbooks share: the body of a generated skill is its description, these
# steps (the middle ones shuffled by the seed: they have no natural order) and an output section.
AREA_STEPS: dict[str, tuple[str, ...]] = {
    "incident": (
        "Confirm the impact: what users see, since when (UTC), and how many are affected.",
        "Check what changed just before: deploys, config, feature flags, provider status pages.",
        "Name an incident lead and a comms owner before anyone starts debugging.",
        "Write every decision with its time in the incident channel; it becomes the timeline.",
        "Prefer reversible mitigations (rollback, flag off, fail over) over fixes in production.",
    ),
    "oncall": (
        "Look at the rotation in the paging tool and confirm who holds the pager and until when.",
        "List open alerts, silences and incidents with their owners and next steps.",
        "Note anything fragile this week: ongoing migrations, freezes, known noisy alerts.",
        "Confirm the escalation path (secondary, manager, vendor support) is reachable.",
    ),
    "release": (
        "Confirm the version, the commit or tag and the owner of this release.",
        "Check CI is green on that commit and the changelog is up to date.",
        "Check the release calendar for freezes, holidays and conflicting releases.",
        "Write down the rollback plan before starting, with the exact command or button.",
        "Announce start and end in the release channel with the version number.",
    ),
    "database": (
        "Find the table sizes and the write rate: what is safe on a small table can lock a big "
        "one.",
        "Make the change backwards compatible so old and new code run side by side.",
        "Rehearse on a staging copy with production-like volume and time it.",
        "Plan batches, throttling and a way to pause; watch replication lag while it runs.",
        "Write the rollback or restore step and check the latest backup is restorable.",
    ),
    "flags": (
        "Name the flag owner and the expiry date when the flag is created.",
        "Define the metric that says the change works and the one that says it hurts.",
        "Roll out in steps (internal, 1%, 10%, 50%, 100%) with a hold time at each step.",
        "Keep a kill switch path that does not need a deploy.",
    ),
    "dependencies": (
        "List the packages and versions involved and read their changelogs for breaking changes.",
        "Upgrade on a branch, run the full test suite and the type checker.",
        "Check transitive dependencies and the lock file diff, not only the direct one.",
        "Roll out behind the normal deploy process; note the previous version for rollback.",
    ),
    "security": (
        "Treat details as confidential: use a private channel, never post secrets in chat.",
        "Identify the systems, data and people in scope, and the owner of each.",
        "Record each decision and approval with name and date for the audit trail.",
        "Apply least privilege: time-limited, narrowest role that does the job.",
        "Close with a check that the change is effective and an entry in the security log.",
    ),
    "infra": (
        "Pull the numbers for the period and the same period before, from the source of truth.",
        "Break the picture down by service, environment and team tag.",
        "Check the change in staging or with a plan/dry run before production.",
        "Note the owner and the date of the next review.",
    ),
    "observability": (
        "Start from the user journey and what users would call broken or slow.",
        "Pick indicators from data you already collect; say where each comes from.",
        "Set thresholds from the last 30 days of data, not from guesses.",
        "Make every alert actionable: a runbook link and an owner.",
    ),
    "people": (
        "Check the dates, the people involved and who owns each step.",
        "Use the team's templates and keep notes factual and specific.",
        "Keep personal information private: share only with the people who need it.",
        "Send a short summary with next steps and dates afterwards.",
    ),
    "architecture": (
        "State the problem, the constraints and who the consumers are before the solution.",
        "List the alternatives considered and why they were not chosen.",
        "Check consistency with existing conventions in the codebase and the style guide.",
        "Write down compatibility and migration for existing consumers.",
        "Record the decision, its owner and the date, where the team will find it later.",
    ),
    "docs": (
        "Know the reader: new user, operator or contributor, and what they try to do.",
        "Lead with the task; keep background short and linked.",
        "Use the team's style: sentence-case headings, second person, present tense, code in code.",
        "Check every command and link actually works before publishing.",
    ),
    "process": (
        "Collect the inputs beforehand: board, last notes, metrics, who is away.",
        "Keep a timebox for each part and a visible agenda.",
        "End with decisions, owners and dates, not only discussion.",
        "Post the summary in the team channel within the day.",
    ),
    "data": (
        "Identify the datasets, the owner and the legal basis or purpose of processing.",
        "Check the request against the retention and privacy policies.",
        "Run changes on a sample first and compare counts before and after.",
        "Log what was done, by whom and when, for the record.",
    ),
    "frontend": (
        "Reproduce on the supported browsers and devices, including a small screen.",
        "Check against the design system components and tokens before writing custom code.",
        "Measure before and after with the same tool and conditions.",
        "Add a regression check (test, story or lint rule) so it stays fixed.",
    ),
    "testing": (
        "Reproduce locally or in CI with the same seed, order and environment.",
        "Look at the failure history: since when, how often, which runners.",
        "Fix the cause rather than adding retries or sleeps; quarantine only with a ticket.",
        "Report the change in CI time or failure rate after the fix.",
    ),
    "vendor": (
        "Write the requirements and the must-haves before looking at vendors.",
        "Involve security, legal and finance early; note their approvals.",
        "Compare on total cost over the contract term, not the list price.",
        "Record the decision and the renewal or exit date.",
    ),
    "devex": (
        "Reproduce the problem on a clean checkout and note the exact versions involved.",
        "Prefer one documented command over several manual steps.",
        "Check the change on CI and on one colleague's machine before announcing it.",
        "Update the README or the wiki page the team actually reads.",
    ),
    "ml": (
        "Name the model version, the data version and the evaluation set.",
        "Compare against the current production model on the same data.",
        "Check cost and latency, not only quality metrics.",
        "Keep the previous model deployable until the new one has proven itself.",
    ),
    "compliance": (
        "Identify the control or requirement being evidenced and its owner.",
        "Collect evidence from the system of record, with dates and links.",
        "Get the approvals required by the policy, in writing.",
        "File everything where the auditors will look for it.",
    ),
}

AREA_OUTPUT: dict[str, str] = {
    "incident": "A short status in chat: impact, severity, owner, next action, next update time.",
    "oncall": "A handover-style list in chat: open items, owners, risks this week.",
    "release": "A checklist in chat with each step ticked or flagged, then the announcement text.",
    "database": "A plan in chat: steps with expected duration, checks between them, rollback.",
    "flags": "A rollout table in chat: stage, audience, start date, metric to watch, decision.",
    "dependencies": "A summary in chat: versions, breaking changes found, risk, PR link.",
    "security": "A private summary: scope, findings or actions, owners, due dates.",
    "infra": "A short report in chat: numbers, top changes, recommended actions with owners.",
    "observability": "A short report in chat: indicators, targets, current status, actions.",
    "people": "A filled-in template or agenda, ready to paste, with names and dates.",
    "architecture": "A document outline or review comments in chat, decisions flagged clearly.",
    "docs": "The draft text or concrete edits, ready to paste, with open questions listed.",
    "process": "A summary in chat: decisions, owners, dates, and what was deferred.",
    "data": "A record of the request: what was found or changed, counts, who approved, when.",
    "frontend": "A list of issues with the page, severity, and the fix or ticket for each.",
    "testing": "A short report: cause, fix or quarantine ticket, before/after numbers.",
    "vendor": "A comparison or recommendation in chat with costs, risks and the decision needed.",
    "devex": "The commands or steps in a code block, plus what to check afterwards.",
    "ml": "A short report: model versions, metrics side by side, cost, recommendation.",
    "compliance": "An evidence list with links and owners, and the gaps still open.",
}

# Areas whose playbooks work on code: their skills narrow the session to the code tools.
CODE_AREAS = frozenset({"dependencies", "architecture", "testing", "devex", "frontend"})
CODE_TOOLS = "grep_code glob_files read_file search_code code_graph"

OWNERS = (
    "platform-team",
    "sre",
    "eng-productivity",
    "security-team",
    "people-ops",
    "product-eng",
    "data-team",
)


def _s(name: str, area: str, description: str, *queries: str) -> SkillSpec:
    return SkillSpec(name, area, description, queries)


# -- the skills and their queries ---------------------------------------------------------------

_OPS_AND_PEOPLE: tuple[SkillSpec, ...] = (
    # incidents
    _s(
        "outage-triage",
        "incident",
        "First-response playbook for a production outage: confirm impact, pick a severity, name "
        "an incident lead and choose the first mitigation. Use when production is down, errors "
        "spike or alerts fire and nobody has taken charge yet.",
        "prod is throwing 500s since the 14:00 deploy, what do we do first?",
        "checkout page just went blank for everyone, what's the first thing we check",
    ),
    _s(
        "incident-comms",
        "incident",
        "Writes internal and customer-facing updates during an ongoing incident, with cadence "
        "and wording rules. Use when you need to tell stakeholders, support or customers what "
        "is happening while the incident is still open.",
        "can you draft the update for the support team about the login problem we're fighting",
        "need to tell execs what's going on with the EU outage, keep it non-technical",
    ),
    _s(
        "status-page-update",
        "incident",
        "Posts and maintains incident entries on the public status page: component states and "
        "incident stages (investigating, identified, monitoring, resolved). Use when a public "
        "status page entry must be opened, updated or closed during an incident.",
        "which components do I mark as degraded on statuspage for the API slowness?",
        "the fix is out, how do I move our public status entry to monitoring and then resolved",
    ),
    _s(
        "postmortem-writeup",
        "incident",
        "Guides writing a blameless postmortem: timeline, impact, contributing factors, what "
        "went well and action items. Use after an incident is resolved and a review document "
        "is due.",
        "I have to write up last Tuesday's database outage, what sections should it have?",
        "help me turn this incident channel log into a blameless review doc",
    ),
    _s(
        "postmortem-action-tracking",
        "incident",
        "Tracks follow-up actions from past postmortems until they are done: owners, due dates, "
        "overdue reminders and monthly summaries. Use when checking whether incident follow-ups "
        "actually got fixed.",
        "how many follow-up tickets from Q3 incidents are still open?",
        "remind owners whose post-incident action items are overdue",
    ),
    _s(
        "incident-commander-handbook",
        "incident",
        "The role guide for whoever is incident commander: running the call, delegating, "
        "keeping the timeline and deciding when to escalate or close. Use when someone is "
        "handed the IC role, maybe for the first time.",
        "I've just been made IC for the first time and I'm panicking a bit, what's my job exactly",
        "as the incident lead do I debug too or just coordinate?",
    ),
    _s(
        "security-incident-response",
        "security",
        "Handles suspected security incidents: compromised accounts, intrusions, malware, "
        "suspicious access. Covers containment, evidence preservation and who to involve. Use "
        "when there may be an attacker or unauthorised access.",
        "we see logins to the admin panel from an IP in a country none of us are in",
        "someone might have gotten into one of our EC2 boxes, there's a weird process mining "
        "crypto",
    ),
    _s(
        "data-breach-notification",
        "compliance",
        "Decides whether a personal-data breach must be notified to the regulator (72 hours "
        "under GDPR) and to the affected people, and drafts the notices. Use once exposure of "
        "personal data is confirmed or likely.",
        "customer emails were exposed in a public bucket for 2 days, do we have to tell the "
        "regulator?",
        "what's the 72 hour clock thing for data leaks and who sends the letter",
    ),
    _s(
        "pager-alert-tuning",
        "observability",
        "Reduces paging noise by reviewing alerts that fired without action, adjusting "
        "thresholds and durations, and demoting non-urgent ones to tickets. Use when on-call is "
        "woken up for things that need no action.",
        "the disk usage alert woke me up three nights in a row and it was always fine",
        "how do we stop paging people for stuff that can wait until morning",
    ),
    _s(
        "runbook-authoring",
        "docs",
        "Writes an operational runbook for a service or an alert: symptoms, checks, safe "
        "actions, escalation. Use when an alert has no runbook or a service is going to "
        "production.",
        "our new queue consumer alert links to nothing, write the page on-call should follow",
        "template for the doc that tells on-call how to handle HighReplicationLag?",
    ),
    _s(
        "war-room-setup",
        "incident",
        "Sets up the coordination space for a major incident: dedicated channel, video bridge, "
        "pinned facts, roles and who is invited. Use at the start of a SEV1 or any incident "
        "spanning several teams.",
        "spin up a channel and bridge for the payments outage and tell me who to pull in",
        "SEV1 declared, where do we all gather and who needs an invite",
    ),
    _s(
        "customer-impact-assessment",
        "incident",
        "Quantifies which customers and how many were affected by an incident, using logs and "
        "billing data, to feed support, SLA credits and the postmortem. Use when someone asks "
        "who was hit and how badly.",
        "can we get a list of accounts that got failed webhooks between 9 and 11?",
        "sales wants to know which enterprise customers were affected yesterday",
    ),
    # on-call
    _s(
        "oncall-handover",
        "oncall",
        "Writes the end-of-shift handover for the next on-call: open incidents, silenced "
        "alerts, risky changes in flight and things to watch. Use at the end of an on-call "
        "week or shift.",
        "my on-call week ends tomorrow, help me write the notes for Priya",
        "what should I pass on to the next person holding the pager",
    ),
    _s(
        "oncall-schedule-swap",
        "oncall",
        "Arranges a swap or cover in the on-call rotation: finding a volunteer, updating the "
        "paging tool, and telling the team. Use when someone can't take their on-call shift.",
        "I'm on call over the 24th but I'll be at a wedding, how do I trade with someone",
        "need someone to cover my pager Thursday night",
    ),
    _s(
        "oncall-onboarding",
        "oncall",
        "Prepares an engineer for their first on-call rotation: access checks, shadow shifts, "
        "key dashboards and runbooks, and a practice page. Use before someone joins the rotation.",
        "Sam joins the rotation next month, what does he need before his first shift",
    ),
    _s(
        "alert-noise-review",
        "oncall",
        "Runs the weekly review of everything that paged: counts by alert, actionable or not, "
        "and tickets to fix the worst offenders. Use for the recurring on-call review meeting.",
        "pull together the stats for our weekly review of pages, which alerts fired most",
    ),
    _s(
        "escalation-policy",
        "oncall",
        "Explains and maintains who gets paged after whom (primary, secondary, manager, vendor) "
        "and the timeouts between levels. Use when someone asks who to escalate to or wants to "
        "change escalation levels.",
        "primary isn't answering the page for 20 min, who's next in line?",
        "we want the engineering manager paged after 30 minutes instead of 15, how",
    ),
    _s(
        "weekend-coverage-plan",
        "oncall",
        "Plans support coverage for holidays and long weekends: who is reachable, reduced "
        "change policy, and vendor contacts. Use before a holiday period or a company offsite.",
        "over christmas half the team is off, how do we make sure someone is around",
    ),
    # releases and deploys
    _s(
        "production-deploy",
        "release",
        "Step-by-step checklist for deploying a service to production: pre-checks, the deploy "
        "itself, smoke tests and announcing it. Use when someone is about to ship to prod.",
        "first time pushing the orders service to prod, walk me through it",
        "about to deploy, anything I should check before I press the button?",
    ),
    _s(
        "deploy-rollback",
        "release",
        "Rolls a bad deploy back to the previous version safely, including when a database "
        "migration ran. Use when a release causes errors and the decision is to go back.",
        "the new version is broken, how do I go back to yesterday's build",
        "can we revert the release if the migration already ran?",
    ),
    _s(
        "canary-analysis",
        "release",
        "Judges a canary deploy by comparing error rate, latency and saturation of the canary "
        "against the baseline, and decides promote or abort. Use while a canary is running.",
        "the canary has been at 5% for 20 minutes, p99 is a bit higher, do we promote it?",
        "metrics for the canary pods vs the stable ones look similar-ish, good enough to go to "
        "100%?",
    ),
    _s(
        "blue-green-cutover",
        "release",
        "Switches traffic between blue and green environments: warm-up, traffic switch, "
        "verification and keeping the old side ready for fallback. Use for a blue/green "
        "release or an environment swap.",
        "green stack is up with the new version, how do we flip the load balancer over safely",
    ),
    _s(
        "deploy-freeze",
        "release",
        "Declares and enforces a change freeze (end of quarter, holidays, big launches): scope, "
        "dates, exception process. Use when someone asks whether they may deploy during a "
        "freeze or wants to announce one.",
        "are we allowed to ship during black friday week? I have a small fix",
        "announce the no-deploy period for the end of the year",
    ),
    _s(
        "hotfix-release",
        "release",
        "Ships an urgent fix outside the normal release cycle: branch from the release tag, "
        "minimal change, fast review, patch version and back-merge. Use when a fix can't wait "
        "for the next scheduled release.",
        "critical bug in 3.2, we need a fix out today without everything else on main",
        "how do I do a patch release from the tag and not from main",
    ),
    _s(
        "release-train",
        "release",
        "Runs the scheduled release train: cut-off time, what rides this train, go/no-go "
        "meeting and the release captain's duties. Use for the recurring weekly or bi-weekly "
        "release.",
        "I'm release captain this week, what's the schedule from cut-off to go/no-go?",
        "did my PR make it onto this Thursday's train or the next one",
    ),
    _s(
        "release-branch-cut",
        "release",
        "Creates a release branch: when to cut, naming, version bump, CI setup and the rules "
        "for cherry-picking fixes into it afterwards. Use when it's time to branch for a "
        "release.",
        "time to branch for 4.0, what's our naming and what has to be updated after",
        "rules for cherry picking a fix into release/2.7?",
    ),
    _s(
        "semver-bump",
        "release",
        "Decides the next version number under semantic versioning from the changes since the "
        "last release (major, minor or patch) and updates version files. Use when unsure which "
        "version to release.",
        "we removed a config option and added a flag, is this 2.0 or 1.9?",
        "only bug fixes since 3.4.1, so the next tag is 3.4.2 right? where do I change the version",
    ),
    _s(
        "ios-release",
        "release",
        "Releases the iOS app: TestFlight build, App Store Connect metadata, phased release and "
        "monitoring crash rates. Use when shipping a new iPhone/iPad app version.",
        "how do we get build 512 from TestFlight to the App Store with a phased rollout",
        "submitting the iPhone app for review tomorrow, what's the checklist",
    ),
    _s(
        "android-release",
        "release",
        "Releases the Android app: signed bundle, Play Console tracks (internal, closed, "
        "production), staged rollout percentages and vitals. Use when shipping a new Android "
        "app version.",
        "push the new Android build to the closed testing track then 10% staged rollout",
        "Play Console says the bundle isn't signed right, how do we ship the apk/aab properly",
    ),
    _s(
        "app-store-rejection",
        "release",
        "Responds to an App Store or Google Play review rejection: reading the guideline cited, "
        "fixing or appealing, and replying in the resolution center. Use when an app update "
        "was rejected by store review.",
        "Apple rejected our update citing guideline 4.2, what now?",
        "google play removed our app for a policy violation about permissions",
    ),
    _s(
        "desktop-app-release",
        "release",
        "Ships the desktop app for macOS and Windows: code signing, notarization, installer "
        "builds and the auto-update feed. Use when releasing an Electron or native desktop "
        "client.",
        "mac users say the new version is blocked by gatekeeper, did notarization fail?",
    ),
    _s(
        "helm-chart-upgrade",
        "release",
        "Upgrades a Helm release in Kubernetes: diffing values, chart version bump, "
        "`helm upgrade` with atomic rollback and checking pods. Use when changing a chart or its "
        "values in a cluster.",
        "bumping the ingress-nginx chart from 4.7 to 4.10, how do I see what changes first",
        "helm upgrade failed halfway and now the release is in pending-upgrade state",
    ),
    # databases
    _s(
        "postgres-migration",
        "database",
        "Writes and runs PostgreSQL schema migrations without downtime: lock-safe DDL, "
        "concurrent indexes, expand/contract for columns. Use when changing tables in a "
        "Postgres database.",
        "adding a NOT NULL column to a 200M row table in postgres, how do I not lock it",
        "need to rename a column in pg without breaking the running app",
    ),
    _s(
        "mysql-schema-change",
        "database",
        "Performs online schema changes on MySQL with gh-ost or pt-online-schema-change, "
        "including throttling on replica lag and cut-over. Use when altering large MySQL tables.",
        "our orders table in mysql has 300M rows and we need a new index, gh-ost or pt-osc?",
        "ALTER TABLE on aurora mysql is going to take hours, how do we do it online",
    ),
    _s(
        "data-backfill",
        "database",
        "Plans and runs a backfill of existing rows after a schema or logic change: batching, "
        "idempotency, throttling, progress tracking and verification. Use when old data must be "
        "recomputed or filled in.",
        "we added a currency column, now need to fill it for 5 years of invoices",
        "the script to recompute user scores for all accounts, how to run it without hammering "
        "the db",
    ),
    _s(
        "db-index-review",
        "database",
        "Reviews indexes on a table: unused and duplicate indexes, missing indexes for frequent "
        "queries, write cost. Use when a table has too many or too few indexes.",
        "the users table has 14 indexes, which ones can we drop?",
        "writes to the events table got slow, I suspect too many indexes on it",
    ),
    _s(
        "slow-query-investigation",
        "database",
        "Finds and fixes a slow SQL query: reading EXPLAIN ANALYZE, statistics, missing "
        "indexes and query rewrites. Use when a specific query or endpoint is slow because of "
        "the database.",
        "this report query takes 40 seconds, here's the explain output, what's wrong",
        "pg_stat_statements shows one select eating all the CPU",
    ),
    _s(
        "db-failover-drill",
        "database",
        "Runs a planned failover of the primary database to a replica to prove it works: "
        "announcement, steps, measured downtime and write-up. Use for scheduled resilience "
        "exercises on databases.",
        "we want to practice promoting the replica to primary next tuesday",
    ),
    _s(
        "backup-restore-test",
        "database",
        "Verifies backups by restoring them to a scratch environment and checking data, timing "
        "the restore against the recovery targets. Use for the periodic restore test or when "
        "backups are in doubt.",
        "when did we last actually restore a backup? let's test last night's snapshot",
        "prove we can recover the prod db from backup and how long it takes",
    ),
    _s(
        "postgres-major-upgrade",
        "database",
        "Upgrades PostgreSQL across major versions (e.g. 13 to 16) with pg_upgrade or logical "
        "replication, extension checks and minimal downtime. Use when moving a Postgres cluster "
        "to a new major version.",
        "RDS says postgres 12 is end of life, plan the move to 16",
        "what breaks when going from postgres 11 to 15, do our extensions survive",
    ),
    _s(
        "redis-memory-pressure",
        "database",
        "Investigates Redis running out of memory: big keys, missing TTLs, eviction policy and "
        "fragmentation. Use when Redis memory alerts fire or evictions spike.",
        "redis used_memory is at 95% and keys are getting evicted, where do I look",
        "our cache keeps evicting hot keys, some keys have no expiry at all",
    ),
    _s(
        "mongodb-index-build",
        "database",
        "Builds indexes on large MongoDB collections safely in a replica set, with rolling "
        "builds and monitoring. Use when adding an index to a big Mongo collection.",
        "need a compound index on the events collection in mongo, 2 billion docs",
    ),
    _s(
        "data-retention-purge",
        "data",
        "Deletes data older than the retention policy allows, in batches, with dry-run counts, "
        "approvals and a record of what was deleted. Use when old logs, events or records must "
        "be purged.",
        "policy says we keep audit events 13 months, we have 4 years, how do we clean up",
    ),
    _s(
        "read-replica-lag",
        "database",
        "Diagnoses replication lag on read replicas: long transactions, heavy writes, replica "
        "resources, and what the app should do meanwhile. Use when replicas fall behind the "
        "primary.",
        "users see stale data after saving, the replica is 90 seconds behind",
        "replica delay alert on the reporting replica keeps firing during the nightly batch",
    ),
    # feature flags and experiments
    _s(
        "feature-flag-rollout",
        "flags",
        "Rolls out a feature behind a flag in stages (internal, beta, percentage ramps) with "
        "metrics to watch and criteria to continue or stop. Use when turning on a new feature "
        "for users.",
        "new search is behind a flag, how should we ramp it to everyone",
        "what percentages and how long between steps for turning on the new checkout",
    ),
    _s(
        "feature-flag-cleanup",
        "flags",
        "Removes stale feature flags: finding flags fully on or off for weeks, deleting the "
        "dead code path and archiving the flag. Use when flags pile up or a rollout is "
        "finished.",
        "we have 300 flags in LaunchDarkly and half are 100% on since last year, clean up plan?",
        "the new editor is fully launched, remove the toggle from the code",
    ),
    _s(
        "ab-test-design",
        "flags",
        "Designs an A/B test: hypothesis, primary metric, sample size and duration, "
        "randomisation unit and guardrail metrics. Use before starting an experiment.",
        "we want to test a cheaper pricing page, how many users do we need and for how long",
        "how long should our onboarding experiment run to detect a 2% lift",
    ),
    _s(
        "experiment-readout",
        "flags",
        "Reads out a finished A/B test: significance, confidence intervals, guardrails, "
        "novelty effects and a ship/no-ship recommendation. Use when an experiment has ended "
        "and needs a decision.",
        "variant B has 3% more signups with p=0.04 after a week, can we call it?",
        "the pricing test finished, write up whether we ship variant B",
    ),
    _s(
        "kill-switch-usage",
        "flags",
        "Uses an operational kill switch to disable a feature or integration instantly in "
        "production, and restores it afterwards. Use when a feature must be turned off now "
        "without a deploy.",
        "the recommendations widget is hammering the DB, how do I turn it off right now without "
        "shipping",
        "partner API is down and our sync integration is spamming errors, disable it now",
    ),
    _s(
        "dark-launch",
        "flags",
        "Runs new code paths in production on real traffic without showing results to users "
        "(shadow traffic, dual reads) to compare behaviour and load. Use before switching to a "
        "rewritten service.",
        "we rewrote pricing in Go, want to send real traffic to it silently and compare results",
        "can we shadow traffic to the new search backend before users see it",
    ),
    # dependencies
    _s(
        "dependency-upgrade",
        "dependencies",
        "Upgrades a library dependency to a new major version: reading the changelog, finding "
        "affected call sites in the code, and testing. Use when bumping a package with "
        "breaking changes.",
        "we're on SQLAlchemy 1.4 and need 2.0, where in our code will it break?",
        "bump pydantic to v2, find what needs changing",
    ),
    _s(
        "python-version-upgrade",
        "dependencies",
        "Moves a codebase to a newer Python version: CI matrix, deprecated APIs, wheels for "
        "native dependencies, Docker base images. Use when upgrading the Python runtime.",
        "python 3.9 goes EOL, what do we need to do to get to 3.12",
    ),
    _s(
        "node-major-upgrade",
        "dependencies",
        "Upgrades Node.js to a new LTS version across services: engines field, native modules, "
        "CI images, lambda runtimes. Use when moving to a new Node major.",
        "node 16 is out of support, upgrading all our services to node 20 — where to start",
    ),
    _s(
        "dependabot-triage",
        "dependencies",
        "Works through the queue of automated dependency update PRs (Dependabot, Renovate): "
        "grouping, merging safe ones, scheduling risky ones. Use when bot PRs pile up.",
        "we have 60 open renovate PRs, how do we get through them",
        "dependabot opened 40 PRs overnight, which ones can I just merge",
    ),
    _s(
        "license-compliance-check",
        "dependencies",
        "Checks the licences of dependencies against the company's allow list (GPL, AGPL, "
        "unknown licences) before adding or shipping them. Use when adding a new library or "
        "preparing a distribution.",
        "can we use an AGPL library in our SaaS backend?",
        "legal wants a list of all third party licences in the mobile app",
    ),
    _s(
        "vulnerability-patching",
        "security",
        "Handles a known vulnerability (CVE) in a dependency or image: checking whether it is "
        "exploitable here, patching within the SLA for its severity, and recording it. Use when "
        "a scanner or advisory flags a CVE.",
        "snyk flagged a critical CVE in log4j in one of our jars, are we exposed?",
        "security scanner says openssl in our base image has a high vuln, what's the timeline to "
        "fix",
    ),
    _s(
        "base-image-refresh",
        "dependencies",
        "Refreshes container base images monthly: rebuilding on the latest patched image, "
        "testing and rolling out across services. Use for scheduled image updates.",
        "it's been 4 months since we rebuilt our docker images on a fresh debian, let's do it",
    ),
    # security
    _s(
        "security-review",
        "security",
        "Security design review for a new feature or service: data flows, authentication, "
        "authorisation, secrets, input handling and logging. Use before launching something "
        "that handles user data or is exposed to the internet.",
        "we're launching a public file upload feature, what should security look at first",
        "what does a security sign-off need for our new public webhooks receiver",
    ),
    _s(
        "threat-modeling",
        "security",
        "Runs a threat modelling session with STRIDE over a system diagram: assets, trust "
        "boundaries, threats and mitigations. Use at design time for systems with sensitive "
        "data or new trust boundaries.",
        "can you facilitate a STRIDE session for the new partner API next week",
        "what could an attacker do with the new SSO bridge, let's map the trust boundaries",
    ),
    _s(
        "secret-rotation",
        "security",
        "Rotates credentials on a schedule (API keys, database passwords, signing keys) without "
        "downtime: dual keys, rollout, revoking the old one. Use for planned rotation.",
        "the db password hasn't changed in 2 years, how do we rotate it with zero downtime",
        "quarterly rotation of the stripe api key is due",
    ),
    _s(
        "leaked-secret-response",
        "security",
        "Responds to a secret exposed in a commit, log, ticket or chat: revoke first, then "
        "assess use, clean history and report. Use right after a credential has leaked.",
        "oops I pushed an AWS access key to a public github repo 10 minutes ago",
        "someone pasted the prod db connection string in #general",
    ),
    _s(
        "access-request",
        "security",
        "Handles a request for access to a system (production, a database, an admin tool): "
        "justification, approver, least-privilege role, expiry. Use when someone asks to be "
        "given access.",
        "I need read access to the prod orders database for a week to debug a billing issue",
        "how do I get into the AWS billing console",
    ),
    _s(
        "access-review-quarterly",
        "security",
        "Runs the periodic access review: exporting who has what, asking managers to confirm, "
        "revoking what is not confirmed, and keeping evidence. Use for the quarterly user "
        "access recertification.",
        "time for the Q2 user access recertification, how do we run it",
    ),
    _s(
        "offboarding-access-removal",
        "security",
        "Removes all access when someone leaves: SSO, cloud, VPN, shared passwords, API tokens "
        "they created, and devices. Use on an employee's or contractor's last day.",
        "Marco's contract ends friday, make sure he loses access to everything",
        "someone was let go this morning, revoke everything today",
    ),
    _s(
        "sso-app-integration",
        "security",
        "Connects a new SaaS application to single sign-on (SAML or OIDC) with group-based "
        "provisioning (SCIM). Use when adding an app to Okta, Entra ID or Google Workspace "
        "login.",
        "we bought Notion, set it up so people log in with Okta and get added automatically",
    ),
    _s(
        "pentest-remediation",
        "security",
        "Works through a penetration test report: triaging findings, assigning owners and "
        "deadlines by severity, retesting. Use when a pentest report arrives.",
        "the external pentest report came back with 23 findings, how do we plan fixes",
        "the pentesters found an IDOR and two XSS, who fixes what by when",
    ),
    _s(
        "phishing-report",
        "security",
        "Handles a reported phishing email or message: what to check, whether anyone clicked, "
        "blocking and warning others. Use when an employee reports a suspicious email.",
        "got an email from 'the CEO' asking me to buy gift cards, is this phishing?",
        "I clicked a link in a fake docusign email and typed my password, what now",
    ),
    _s(
        "security-questionnaire",
        "compliance",
        "Answers customer security questionnaires (SIG, CAIQ, custom spreadsheets) from the "
        "approved answer library, flagging new questions for security. Use when sales sends a "
        "security questionnaire.",
        "a prospect sent a 300 row security spreadsheet, we need answers by friday",
    ),
    _s(
        "iam-policy-review",
        "security",
        "Reviews cloud IAM policies and roles for wildcards, unused permissions and privilege "
        "escalation paths. Use when writing or auditing AWS/GCP IAM policies.",
        "does this IAM policy with s3:* on resource * look too broad?",
        "our CI role has AdministratorAccess, how do we cut it down",
    ),
    # infra and cost
    _s(
        "cloud-cost-report",
        "infra",
        "Produces the monthly cloud spend report by team and service, with changes from last "
        "month and savings opportunities. Use for the regular cost review.",
        "can you put together the monthly AWS spend breakdown per team",
        "how much did we spend on GCP in October compared to September",
    ),
    _s(
        "cost-anomaly-investigation",
        "infra",
        "Investigates a sudden jump in cloud cost: which account, service and resource, when "
        "it started and what changed. Use when a bill or a cost alert is unexpectedly high.",
        "our data transfer costs doubled overnight, what happened?",
        "got a budget alert, we're at 180% of forecast on the AWS bill",
    ),
    _s(
        "reserved-capacity-planning",
        "infra",
        "Decides on reserved instances, savings plans or committed-use discounts from steady "
        "usage, term and coverage targets. Use before buying commitments from a cloud provider.",
        "should we buy a 3 year savings plan or reserved instances for the EC2 fleet",
    ),
    _s(
        "kubernetes-resource-tuning",
        "infra",
        "Right-sizes CPU and memory requests and limits for Kubernetes workloads from actual "
        "usage, avoiding throttling and OOM kills. Use when pods are over- or under-provisioned.",
        "our pods request 2 CPUs but use 200m, how should we set requests and limits",
    ),
    _s(
        "capacity-planning",
        "infra",
        "Forecasts capacity for the next quarters from growth and launch plans: headroom, "
        "bottlenecks and what to order or scale. Use for planning ahead of growth or big events.",
        "marketing expects 3x traffic next quarter, will our infra hold",
        "when will the kafka cluster run out of disk at the current growth rate",
    ),
    _s(
        "load-testing",
        "infra",
        "Plans and runs a load test (k6, Locust, Gatling): realistic scenarios, ramp profile, "
        "test environment, success criteria and reading results. Use before a launch or to "
        "find a system's limits.",
        "write a k6 script to hit the search endpoint with 2000 rps",
        "how do we stress test checkout before the sale without hurting prod",
    ),
    _s(
        "autoscaling-tuning",
        "infra",
        "Tunes autoscaling (HPA, ASG, serverless concurrency): metrics, targets, cooldowns and "
        "min/max replicas. Use when scaling reacts too late, flaps or overspends.",
        "the HPA keeps scaling up and down every few minutes, how do we calm it",
        "we scale too late when traffic jumps at 9am and requests time out",
    ),
    _s(
        "terraform-plan-review",
        "infra",
        "Reviews a Terraform plan before apply: destroys and replacements, drift, state moves, "
        "blast radius. Use when someone asks whether a terraform plan is safe to apply.",
        "the plan says 1 to destroy on the RDS instance, is that expected??",
        "can you look at my terraform plan output before I apply to prod",
    ),
    _s(
        "dns-change",
        "infra",
        "Makes DNS changes safely: lowering TTLs ahead, record changes, verification and "
        "rollback. Use when moving a domain, changing records or migrating DNS providers.",
        "we're moving api.example.com to the new load balancer, how do we cut DNS over",
        "moving our domains from godaddy to route53 without downtime",
    ),
    _s(
        "tls-certificate-renewal",
        "infra",
        "Renews TLS certificates before expiry and fixes expired ones: issuance, chain, "
        "deployment to load balancers and checks. Use when a certificate is expiring or expired.",
        "browser says our cert expired this morning!",
        "the wildcard certificate expires in 10 days, how do we renew and roll it out",
    ),
    _s(
        "cdn-cache-purge",
        "infra",
        "Purges or invalidates CDN caches (CloudFront, Fastly, Cloudflare) safely and checks "
        "origin load afterwards. Use when users see stale assets or content after a change.",
        "users still see the old logo, how do I invalidate cloudfront",
    ),
    _s(
        "disaster-recovery-drill",
        "infra",
        "Runs a disaster recovery exercise: failing a region or restoring the platform from "
        "scratch, measuring RTO and RPO against targets. Use for annual DR tests.",
        "what happens if us-east-1 disappears for a day? let's actually test the recovery plan",
        "let's do the yearly exercise where we rebuild everything in another region",
    ),
    # observability
    _s(
        "slo-report",
        "observability",
        "Produces the monthly SLO report: attainment per service, error budget burned, the "
        "incidents that burned it, trend. Use for the regular reliability review.",
        "how did the API do against its 99.9% target last month",
        "make the reliability numbers slide for the monthly ops review",
    ),
    _s(
        "slo-definition",
        "observability",
        "Defines service level indicators and objectives for a service: choosing the SLI, the "
        "target, the window, and burn-rate alerts. Use when a service has no SLO yet.",
        "our new notifications service needs an SLO, what should we measure",
        "what's a sensible latency objective for the search API and over what window",
    ),
    _s(
        "error-budget-policy",
        "observability",
        "Applies the error budget policy: what happens when a service exhausts its budget "
        "(feature freeze, reliability work) and who decides. Use when a budget is burned.",
        "search has burned all its error budget 10 days into the month, what does that mean for us",
        "the team ran out of error budget again, are we supposed to stop feature work?",
    ),
    _s(
        "dashboard-design",
        "observability",
        "Designs a service dashboard in Grafana or Datadog: golden signals first, one question "
        "per panel, consistent units. Use when building or cleaning up dashboards.",
        "our grafana board has 60 panels and nobody can read it, how should it be laid out",
    ),
    _s(
        "log-retention-change",
        "observability",
        "Changes how long logs are kept and where (hot, archive), balancing cost, debugging "
        "needs and compliance. Use when log storage is too costly or retention must change.",
        "datadog logs cost a fortune, can we keep them 7 days hot and archive the rest",
    ),
    _s(
        "tracing-instrumentation",
        "observability",
        "Adds distributed tracing to a service with OpenTelemetry: spans, context propagation, "
        "sampling and attributes. Use when requests cannot be followed across services.",
        "we can't tell where time goes between gateway and the billing service, add otel?",
    ),
    _s(
        "alert-rule-authoring",
        "observability",
        "Writes a new alert rule: symptom-based condition, duration, severity, routing and "
        "runbook link. Use when creating an alert in Prometheus, Datadog or similar.",
        "write a prometheus alert for when the job queue is older than 10 minutes",
        "I want a datadog monitor for 5xx ratio above 2% for 10 minutes",
    ),
    _s(
        "synthetic-monitoring",
        "observability",
        "Sets up synthetic checks that exercise key user journeys from outside (login, "
        "checkout) on a schedule, with alerting. Use to catch outages before users report them.",
        "we found out checkout was broken from a tweet, can we have a robot that tries to buy "
        "every 5 min",
    ),
    # people and hiring
    _s(
        "new-hire-onboarding",
        "people",
        "Plans a new engineer's first two weeks: accounts and hardware, setup, first tasks, "
        "people to meet and a 30/60/90 check-in. Use when someone is joining the team.",
        "Lena starts on Monday as a backend dev, can you make her first two weeks plan",
        "what accounts does a new engineer need on day one",
    ),
    _s(
        "onboarding-buddy",
        "people",
        "Guides the onboarding buddy of a new hire: what the buddy does each week, check-in "
        "questions and when to raise concerns. Use when someone is asked to be a buddy.",
        "I've been asked to be the buddy for the new hire, what am I supposed to do",
    ),
    _s(
        "interview-loop-planning",
        "people",
        "Plans an interview loop for a role: stages, competencies per interview, interviewers, "
        "scheduling and candidate communication. Use when opening a position or scheduling "
        "onsites.",
        "set up the onsite for the senior SRE candidate, who should interview on what",
        "which interviews should a staff engineer candidate go through",
    ),
    _s(
        "interview-debrief",
        "people",
        "Runs the hiring debrief after a loop: independent written feedback first, discussion "
        "by competency, decision and calibration. Use after a candidate's interviews are done.",
        "all four interviews for Jonas are done, how do we run the hire/no-hire meeting",
        "interviewers disagree on the candidate, how do we reach a decision",
    ),
    _s(
        "take-home-grading",
        "people",
        "Grades a take-home coding exercise with the rubric, consistently and blind to the "
        "candidate's background. Use when reviewing a candidate's submitted assignment.",
        "can you help me score this candidate's take-home project against our rubric",
    ),
    _s(
        "system-design-interview",
        "people",
        "Conducts a system design interview: the prompt, follow-up questions, what good looks "
        "like at each level and how to write feedback. Use when preparing to interview for "
        "architecture skills.",
        "I'm running the design round tomorrow for a staff candidate, which problem and what "
        "signals",
    ),
    _s(
        "job-description-writing",
        "people",
        "Writes a job posting: role summary, responsibilities, must-have vs nice-to-have, "
        "inclusive language and salary range. Use when opening a new position.",
        "write the posting for a mid-level frontend engineer, remote EU",
    ),
    _s(
        "offer-approval",
        "people",
        "Prepares an offer for approval: level, compensation band check, approvers and "
        "timeline to the candidate. Use when the team decided to hire and needs to make an offer.",
        "we want to hire Aisha at senior level, who approves the comp and how fast can we send it",
    ),
    _s(
        "performance-review-writeup",
        "people",
        "Writes performance review feedback for a report or peer: impact with examples, "
        "growth areas, ratings calibrated to the level. Use during review season.",
        "help me write the year-end review for one of my engineers, she led the billing migration",
        "self-review is due friday and I don't know how to describe my impact",
    ),
    _s(
        "promotion-packet",
        "people",
        "Assembles a promotion case: evidence against the next level's expectations, project "
        "impact, peer quotes. Use when a manager or engineer prepares a promotion proposal.",
        "I think I'm ready for staff, how do I put my case together",
    ),
    _s(
        "one-on-one-agenda",
        "people",
        "Prepares a one-on-one meeting: running agenda, questions for growth, feedback and "
        "follow-ups from last time. Use before a manager/report 1:1.",
        "what should I talk about in my first 1:1 with my new report",
        "my 1:1s with my manager feel like status updates, what should we discuss instead",
    ),
    _s(
        "team-offboarding",
        "people",
        "Handles knowledge transfer when someone leaves the team: ownership handover, docs, "
        "on-call removal and farewell. Use when a teammate is leaving or moving teams.",
        "Tom is moving to another team in two weeks, he owns the billing service, what do we hand "
        "over",
    ),
    _s(
        "intern-program",
        "people",
        "Plans a summer intern's project and mentoring: scoped project, milestones, mentor "
        "duties and the final presentation. Use when the team hosts an intern.",
        "we're getting an intern in June, need a project that fits 12 weeks",
    ),
    _s(
        "reference-check",
        "people",
        "Conducts reference checks for a finalist: whom to call, questions, legal limits and "
        "how to record answers. Use before extending an offer.",
        "what do I ask the references for our final candidate",
    ),
)

_BUILD_AND_BUSINESS: tuple[SkillSpec, ...] = (
    # API and architecture
    _s(
        "api-design-review",
        "architecture",
        "Reviews a proposed HTTP API before it is built: resource naming, status codes, "
        "pagination, errors, idempotency and auth. Use when someone shares an OpenAPI spec or "
        "endpoint design for feedback.",
        "here's the openapi yaml for our new orders endpoints, anything we'll regret later?",
        "should a failed validation return 400 or 422, and how do we paginate this list",
    ),
    _s(
        "rest-api-versioning",
        "architecture",
        "Decides how to version a public REST API (URL, header, date-based), what counts as a "
        "breaking change and how long old versions live. Use when a change would break API "
        "clients.",
        "we need to change the response shape of /v1/users, do we make a v2?",
        "is adding a new required query param a breaking change for our public API",
    ),
    _s(
        "graphql-schema-change",
        "architecture",
        "Evolves a GraphQL schema without breaking clients: additive changes, @deprecated, "
        "field usage checks and schema registry checks. Use when changing types or fields in a "
        "GraphQL API.",
        "I want to change a field from String to an enum in our graphql schema, will the apps "
        "break",
        "how do we remove a deprecated graphql field safely, who's still querying it",
    ),
    _s(
        "api-deprecation-notice",
        "architecture",
        "Announces the deprecation and sunset of an API or endpoint: timeline, Sunset headers, "
        "emails to affected integrators, usage tracking until shutdown. Use when retiring an "
        "API that external clients use.",
        "we're shutting down the v1 webhooks in 6 months, how do we tell the integrators",
    ),
    _s(
        "architecture-decision-record",
        "architecture",
        "Writes an architecture decision record (ADR): context, decision, alternatives, "
        "consequences, status. Use when the team made or is about to make a significant "
        "technical choice that should be documented.",
        "we decided to go with kafka over rabbitmq, write down the decision so people know why in "
        "2 years",
        "ADR template?",
    ),
    _s(
        "rfc-process",
        "architecture",
        "Runs the RFC process for large changes: when an RFC is needed, template, reviewers, "
        "comment period and how decisions are recorded. Use when proposing a change that "
        "affects several teams.",
        "I want to propose moving all services to gRPC, what's the process to get buy-in",
    ),
    _s(
        "tech-debt-triage",
        "architecture",
        "Inventories and prioritises technical debt by cost of delay and risk, and turns the top "
        "items into planned work. Use when the team wants to decide which debt to pay down.",
        "we have a long list of legacy stuff everyone hates, how do we decide what to fix first",
    ),
    _s(
        "service-ownership-catalog",
        "architecture",
        "Keeps the service catalog current: owner team, on-call, repo, runbook and tier for "
        "each service. Use when asking who owns a service or when registering a new one.",
        "who owns the thumbnail-service? nobody answers in its channel",
        "register our new service in backstage with the right owner and tier",
    ),
    _s(
        "microservice-split",
        "architecture",
        "Plans extracting a module from a monolith into a separate service: boundaries, data "
        "ownership, strangler pattern and rollout. Use when considering breaking up a monolith.",
        "we want to pull notifications out of the rails monolith into its own service, how do we "
        "start",
    ),
    _s(
        "event-schema-change",
        "architecture",
        "Changes the schema of events or messages on a bus (Kafka, SNS/SQS) compatibly: schema "
        "registry rules, versioned topics, consumer coordination. Use when producers need to "
        "change a message format.",
        "we need to add a required field to the OrderPlaced kafka event, consumers are in 5 teams",
        "can I rename a field in the avro schema for user-events without breaking consumers",
    ),
    # docs
    _s(
        "docs-style-guide",
        "docs",
        "Applies the team's documentation style guide: voice, headings, terminology, code "
        "samples, screenshots. Use when writing or editing docs and unsure of the house style.",
        "do we write 'log in' or 'login', and title case or sentence case for headings?",
        "edit this doc page so it follows our writing conventions",
    ),
    _s(
        "readme-writing",
        "docs",
        "Writes or improves a repository README: what it is, quick start, configuration, "
        "development, ownership. Use when a repo has a missing or outdated README.",
        "our repo's readme just says 'TODO', write a proper one",
        "new people can't figure out how to run this repo from the readme, rewrite it",
    ),
    _s(
        "api-reference-docs",
        "docs",
        "Writes reference documentation for API endpoints: parameters, examples in several "
        "languages, errors, rate limits, generated from the spec where possible. Use when "
        "documenting a public API.",
        "partners complain our API docs have no request examples, fix the docs for /payments",
    ),
    _s(
        "tutorial-writing",
        "docs",
        "Writes a step-by-step tutorial that takes a new user from zero to a working result, "
        "tested end to end. Use for getting-started guides and how-to tutorials.",
        "write a getting started guide: from signup to sending the first SMS with our SDK",
    ),
    _s(
        "docs-site-publish",
        "docs",
        "Builds and publishes the documentation site (MkDocs, Docusaurus): preview, broken link "
        "check, versioned docs, deploy. Use when docs changes need to go live.",
        "my docs PR is merged but the website still shows the old page, how does publishing work",
    ),
    _s(
        "internal-wiki-cleanup",
        "docs",
        "Cleans up the internal wiki: finding stale pages, assigning owners, archiving, and "
        "merging duplicates. Use when the wiki is out of date or hard to navigate.",
        "half our confluence space is from 2019 and wrong, how do we clean it",
    ),
    _s(
        "changelog-entry",
        "docs",
        "Adds an entry to the changelog for a single change in a PR (keep-a-changelog style "
        "or a news fragment). Use when a contributor asks what to write in the changelog for "
        "their pull request.",
        "CI says my PR needs a changelog fragment, what do I put in it",
        "what line do I add to CHANGELOG.md under Unreleased for my bugfix PR",
    ),
    _s(
        "error-message-writing",
        "docs",
        "Writes user-facing error messages that say what happened and what to do next, "
        "without blame or jargon. Use when designing or reviewing error text in a product or "
        "CLI.",
        "our app says 'Error 0x80041' when the card is declined, write something humans understand",
        "rewrite the error the CLI prints when the config file is missing",
    ),
    # process
    _s(
        "sprint-planning",
        "process",
        "Runs sprint planning: capacity after holidays and on-call, sprint goal, pulling "
        "ready tickets, and commitments. Use at the start of a sprint.",
        "sprint starts monday, two people are on vacation, how much should we take on",
        "help me prep the planning meeting for sprint 42",
    ),
    _s(
        "retro-facilitation",
        "process",
        "Facilitates a sprint or project retrospective: format choice, safe discussion, "
        "grouping themes and picking a few actions with owners. Use when running a retro.",
        "I'm running our retro tomorrow and the last ones were boring, any format ideas",
        "the team is pretty frustrated after this launch, how do I run the look-back meeting",
    ),
    _s(
        "backlog-grooming",
        "process",
        "Refines the backlog: closing stale tickets, splitting large items, writing acceptance "
        "criteria, ordering by value. Use for backlog refinement sessions.",
        "our jira backlog has 800 tickets, how do we make it usable again",
    ),
    _s(
        "standup-summary",
        "process",
        "Summarises async standup updates into a short digest: progress, blockers, who needs "
        "help. Use when the team posts daily updates in a channel and someone wants the gist.",
        "summarise what everyone posted in #team-standup today, especially blockers",
    ),
    _s(
        "estimation-session",
        "process",
        "Runs an estimation session (planning poker, t-shirt sizes) and turns estimates into a "
        "forecast range. Use when the team must size work or answer 'when will it be done?'.",
        "the PM wants a date for the new reporting feature, how do we size it honestly",
    ),
    _s(
        "okr-drafting",
        "process",
        "Drafts team OKRs: outcome-based objectives, measurable key results, alignment with "
        "company goals. Use at the start of a quarter when goals must be written.",
        "help me write our team's objectives and key results for next quarter",
        "is 'ship the new dashboard' a good key result?",
    ),
    _s(
        "quarterly-planning",
        "process",
        "Prepares quarterly planning: capacity, commitments vs stretch, dependencies on other "
        "teams and the plan document. Use a few weeks before a new quarter.",
        "we need our Q3 plan ready by the 20th, what goes into it and how much capacity do we "
        "really have",
    ),
    _s(
        "roadmap-update",
        "process",
        "Updates and communicates the product/engineering roadmap: what moved, why, and what it "
        "means for stakeholders. Use when priorities change or for the monthly roadmap post.",
        "the sso project slipped a quarter, how do we update the roadmap and tell sales",
    ),
    _s(
        "meeting-notes",
        "process",
        "Takes structured meeting notes: attendees, decisions, action items with owners and "
        "dates, posted after the meeting. Use when someone asks for notes or minutes of a "
        "meeting.",
        "turn this transcript of the architecture sync into minutes with action items",
        "write up minutes from today's planning call, decisions and who does what",
    ),
    _s(
        "decision-log",
        "process",
        "Records team decisions in a log with context, options, who decided and when, so they "
        "can be found later. Use when a decision is made in chat or a meeting and should not "
        "get lost.",
        "we agreed in the thread that on-call gets a day off after a weekend shift, log that "
        "somewhere official",
        "we keep re-arguing things we settled months ago, where do we write down what was decided",
    ),
    _s(
        "project-kickoff",
        "process",
        "Kicks off a project: goals and non-goals, stakeholders, roles (RACI), milestones, risks "
        "and communication plan. Use at the start of a multi-week project.",
        "we start the billing revamp next week, what should the kick-off cover",
    ),
    _s(
        "status-report-weekly",
        "process",
        "Writes the weekly project status report: green/amber/red, progress against "
        "milestones, risks and asks. Use for recurring stakeholder updates.",
        "write this week's update for leadership on the migration project, we're a bit behind",
        "RAG status update for the data platform project, due every friday",
    ),
    # data and privacy
    _s(
        "gdpr-data-request",
        "data",
        "Handles a data subject access request (DSAR): verifying identity, finding the person's "
        "data in every system, and sending an export within a month. Use when a user asks for "
        "a copy of their personal data.",
        "a customer emailed asking for all the data we hold about them under GDPR",
        "what's the deadline for answering a subject access request and what do we send",
    ),
    _s(
        "gdpr-data-deletion",
        "data",
        "Handles a right-to-erasure request: deleting or anonymising a person's data across "
        "systems and backups, with exceptions for legal retention. Use when someone asks to be "
        "forgotten or have their account data deleted.",
        "a user wants their account and everything about them erased, which systems do we purge",
        "right to be forgotten request came in, do backups count?",
    ),
    _s(
        "dpia-assessment",
        "compliance",
        "Runs a data protection impact assessment for new processing of personal data: "
        "necessity, risks to people, mitigations, DPO sign-off. Use before launching features "
        "that process personal data in new ways.",
        "we want to use face recognition for login, the DPO says we need an impact assessment "
        "first",
    ),
    _s(
        "analytics-event-tracking",
        "data",
        "Specifies product analytics events: naming convention, properties, tracking plan and "
        "QA of events before release. Use when adding tracking for a new feature.",
        "what events should we fire for the new onboarding flow and how do we name them",
    ),
    _s(
        "metric-definition",
        "data",
        "Defines a business metric precisely: formula, filters, time window, owner and the "
        "canonical query, so dashboards agree. Use when two reports disagree about a number.",
        "finance and product have different numbers for monthly active users, which one is right",
        "what exactly counts as an active customer in our dashboards",
    ),
    _s(
        "data-quality-check",
        "data",
        "Adds data quality checks to a dataset: freshness, volume, nulls, uniqueness, "
        "referential integrity, with alerts. Use when bad data reached a dashboard or model.",
        "yesterday's revenue dashboard showed zero because the table wasn't loaded, how do we "
        "catch that",
    ),
    _s(
        "etl-pipeline-failure",
        "data",
        "Triages a failed data pipeline run (Airflow, Dagster): reading task logs, re-running "
        "safely, backfilling missed partitions and notifying consumers. Use when a scheduled "
        "ETL job fails.",
        "the nightly airflow DAG failed at the load step, can I just clear and rerun it?",
        "the dagster job that loads salesforce data has been failing since sunday",
    ),
    _s(
        "dbt-model-change",
        "data",
        "Changes a dbt model safely: impact on downstream models and dashboards, tests, and "
        "deploying with a full refresh when needed. Use when editing SQL models in the warehouse.",
        "I'm changing the grain of fct_orders in dbt, what downstream stuff breaks",
    ),
    _s(
        "data-warehouse-access",
        "data",
        "Grants access to warehouse data (Snowflake, BigQuery) by role and data classification, "
        "with masking for personal data. Use when an analyst or team needs to query tables.",
        "the marketing analyst needs to query the customers schema in snowflake",
    ),
    _s(
        "pii-log-scrubbing",
        "data",
        "Finds and removes personal data from application logs (emails, tokens, card numbers): "
        "redaction at the logger, purging stored logs. Use when PII shows up in logs.",
        "I just noticed we log full email addresses and phone numbers in the request logs",
        "credit card numbers are showing up in our elasticsearch logs",
    ),
    # frontend and mobile
    _s(
        "accessibility-review",
        "frontend",
        "Reviews a page or component for accessibility against WCAG 2.2 AA: keyboard, screen "
        "reader labels, contrast, focus and motion. Use before releasing UI or after an "
        "accessibility complaint.",
        "a blind user says they can't complete signup with a screen reader, what should we check",
        "can you do an a11y pass on the new settings page",
    ),
    _s(
        "i18n-string-extraction",
        "frontend",
        "Makes UI text translatable: extracting hard-coded strings into message catalogs, "
        "plurals and placeholders with ICU syntax. Use when preparing code for localisation.",
        "we have English text hard-coded all over the react app, how do we get it ready for "
        "translation",
    ),
    _s(
        "translation-handoff",
        "frontend",
        "Sends new strings to translators or the TMS (Crowdin, Lokalise), with context and "
        "screenshots, and merges translations back before release. Use when new text needs "
        "translating.",
        "the German and French translations for the new screens need to be done by the release, "
        "how do we send them",
    ),
    _s(
        "rtl-layout-check",
        "frontend",
        "Checks that the UI works in right-to-left languages (Arabic, Hebrew): mirrored layout, "
        "logical CSS properties, icons and mixed text. Use when adding an RTL locale.",
        "we're launching in Arabic, the layout looks broken",
    ),
    _s(
        "frontend-performance-audit",
        "frontend",
        "Audits web page performance: bundle size, render-blocking resources, images, caching, "
        "with Lighthouse and the network panel. Use when a page loads slowly.",
        "our landing page takes 6 seconds on mobile, where's the time going",
    ),
    _s(
        "browser-support-matrix",
        "frontend",
        "Decides and documents which browsers and versions are supported, from usage data, and "
        "configures browserslist and polyfills. Use when asked whether to support a browser.",
        "do we still need to support safari 14? 0.4% of our users",
    ),
    _s(
        "design-review-handoff",
        "frontend",
        "Runs the handoff from design to engineering: Figma specs, states and edge cases, "
        "responsive behaviour, and a design QA pass before release. Use when a design is ready "
        "to be built.",
        "the figma for the new billing page is done, what should devs ask the designer before "
        "starting",
    ),
    _s(
        "mobile-crash-triage",
        "frontend",
        "Triages crashes in the mobile apps from Crashlytics/Sentry: grouping, symbolication, "
        "affected versions and devices, and whether a hotfix is needed. Use when crash-free "
        "rate drops.",
        "crash-free users fell to 97% after the last app update, top crash is in the camera screen",
        "android app crashes on startup for samsung devices after 5.2",
    ),
    _s(
        "push-notification-campaign",
        "frontend",
        "Plans and sends a push notification campaign: audience, copy, timing by time zone, "
        "throttling and opt-out rules. Use when marketing or product wants to notify app users.",
        "product wants to send a push to all users about the new feature on tuesday",
    ),
    _s(
        "deep-link-setup",
        "frontend",
        "Sets up deep links into the mobile apps: universal links, Android app links, fallbacks "
        "and testing. Use when links in emails should open the app on the right screen.",
        "links in our password reset email open the browser instead of the app on iphone",
    ),
    _s(
        "web-vitals-regression",
        "frontend",
        "Investigates a regression in Core Web Vitals (LCP, INP, CLS) seen in field data, "
        "finding the release and the cause. Use when search console or RUM shows vitals got "
        "worse.",
        "search console says our LCP went from good to poor two weeks ago",
    ),
    _s(
        "css-design-tokens",
        "frontend",
        "Manages design tokens (colours, spacing, typography) shared by web and mobile: naming, "
        "generating CSS variables, and theming such as dark mode. Use when changing the visual "
        "foundations.",
        "we need a dark mode and our colours are hard-coded hex values everywhere",
    ),
    _s(
        "storybook-component",
        "frontend",
        "Adds a component to the shared UI library with Storybook stories, props docs, "
        "accessibility checks and visual tests. Use when building a reusable component.",
        "I built a date range picker, how do I add it to our component library properly",
    ),
    # testing and CI
    _s(
        "flaky-test-triage",
        "testing",
        "Handles flaky tests in the unit and integration suites: detecting them from CI "
        "history, quarantining with a ticket, finding the nondeterminism. Use when CI fails "
        "randomly and re-runs pass.",
        "test_order_totals fails like once in 20 runs on CI, never locally",
        "we keep hitting re-run on the pipeline, how do we deal with the unstable tests",
    ),
    _s(
        "e2e-test-flakiness",
        "testing",
        "Stabilises browser end-to-end tests (Playwright, Cypress): waits instead of sleeps, "
        "test isolation, network mocking and trace viewing. Use when UI end-to-end tests are "
        "unreliable.",
        "our cypress tests time out randomly clicking the submit button",
        "playwright test passes locally but fails in CI waiting for the modal",
    ),
    _s(
        "ci-pipeline-speedup",
        "testing",
        "Speeds up a slow CI pipeline: caching, parallel jobs, test splitting, skipping unchanged "
        "parts. Use when builds take too long.",
        "CI takes 45 minutes per PR, how can we get it under 10",
        "our github actions build reinstalls all npm packages every time, slow",
    ),
    _s(
        "test-plan-writing",
        "testing",
        "Writes a test plan for a feature: scope, risks, test cases by level, environments and "
        "exit criteria. Use before QA starts on a significant feature.",
        "write the QA plan for the new subscription upgrade flow",
    ),
    _s(
        "qa-signoff",
        "testing",
        "Runs the QA sign-off before a release: regression checklist, open bugs by severity, "
        "known issues and go/no-go from QA. Use when a release candidate needs QA approval.",
        "RC2 is on staging, what does QA need to check before we say go",
    ),
    _s(
        "regression-test-selection",
        "testing",
        "Picks which tests to run for a change from the code it touches (callers, modules, "
        "owners), to test risky changes deeply without running everything. Use when a change "
        "needs targeted regression testing.",
        "I changed the tax calculation helper, which tests cover code that calls it?",
        "which test suites should we run after touching the auth middleware",
    ),
    _s(
        "test-data-management",
        "testing",
        "Creates and maintains test data: factories and fixtures, anonymised production "
        "snapshots, seed scripts for staging. Use when tests or staging need realistic data.",
        "staging has no realistic data, can we copy prod there? or what instead",
    ),
    _s(
        "contract-testing",
        "testing",
        "Sets up consumer-driven contract tests (Pact) between services so a provider change "
        "cannot silently break a consumer. Use when services break each other's APIs.",
        "the mobile backend keeps breaking the app's API calls, how do we catch it before deploy",
        "how do we set up pact between the web frontend and the orders API",
    ),
    _s(
        "ci-secrets-setup",
        "testing",
        "Configures secrets for CI pipelines: OIDC to the cloud instead of long-lived keys, "
        "scoped secrets per environment, masking in logs. Use when a pipeline needs "
        "credentials.",
        "how do I give the github actions workflow access to push to ECR without storing an AWS "
        "key",
    ),
    # vendors and business
    _s(
        "vendor-evaluation",
        "vendor",
        "Evaluates competing vendors or tools for a need: requirements matrix, trials, "
        "references and total cost, ending in a recommendation. Use when choosing between "
        "products to buy.",
        "we need an error tracking tool, compare sentry, rollbar and bugsnag for us",
        "help me structure the choice between three observability vendors",
    ),
    _s(
        "vendor-security-review",
        "security",
        "Assesses a vendor's security before sharing data with them: SOC 2 report, DPA, data "
        "location, subprocessors, access model. Use when a new supplier will process company or "
        "customer data.",
        "the new CRM vendor will hold customer data, what security docs do we need from them",
    ),
    _s(
        "saas-procurement",
        "vendor",
        "Buys a new SaaS tool through procurement: budget owner, approvals, contract review, "
        "security check and purchase order. Use when a team wants to pay for a new tool.",
        "we want to buy 20 seats of Linear, what's the process to actually get it paid",
    ),
    _s(
        "contract-renewal",
        "vendor",
        "Prepares a vendor contract renewal: usage vs paid seats, price benchmarks, negotiation "
        "points and notice deadlines. Use a few months before a contract renews.",
        "our datadog contract renews in 60 days and they want 30% more, how do we negotiate",
    ),
    _s(
        "build-vs-buy",
        "vendor",
        "Decides whether to build something in-house or buy it: total cost of ownership, "
        "differentiation, time to value and exit risk. Use when a team debates writing its own "
        "tool versus adopting a product.",
        "should we write our own feature flag service or pay for one?",
    ),
    _s(
        "budget-request",
        "vendor",
        "Writes a budget request for headcount, tools or infrastructure: the problem, cost, "
        "alternatives and expected return. Use when asking finance or leadership for money.",
        "I need to justify 40k for a second staging environment to the CFO",
    ),
    _s(
        "customer-escalation",
        "vendor",
        "Handles an escalation from an important customer: owner, technical investigation, "
        "regular updates to the account team and closure. Use when sales or support escalates "
        "a customer problem to engineering.",
        "our biggest customer's CTO emailed our CEO about the export bug, it's now on us",
        "account manager says a key customer threatens to churn over the sync bug",
    ),
    _s(
        "support-ticket-triage",
        "vendor",
        "Triages support tickets routed to engineering: reproducing, labelling bug vs question "
        "vs feature request, priority and replying to support. Use when the support queue for "
        "the team needs sorting.",
        "there are 25 tickets in the engineering escalations queue, help me sort them",
    ),
    _s(
        "sla-credit-request",
        "vendor",
        "Handles a customer's claim for service credits under the SLA: checking measured "
        "uptime against the contract, calculating the credit, approvals. Use when a customer "
        "asks for compensation for downtime.",
        "Acme says we breached the 99.95% uptime in March and wants credits, were we below?",
        "customer wants money back for last month's downtime, how much do we owe",
    ),
    _s(
        "partner-api-onboarding",
        "vendor",
        "Onboards an external partner to the API: sandbox keys, integration checklist, "
        "certification test and go-live. Use when a new partner or integrator starts building "
        "against the API.",
        "a new reseller wants to integrate with our API, what do we give them and in what order",
    ),
    # developer experience
    _s(
        "local-dev-setup",
        "devex",
        "Gets a working local development environment: prerequisites, one setup command, "
        "seeded database, common errors and fixes. Use when someone can't run the project "
        "locally.",
        "docker compose up fails on my new M3 mac with some platform error",
        "how do I run the whole app on my laptop",
    ),
    _s(
        "repo-bootstrap",
        "devex",
        "Creates a new service repository from the team template: layout, CI, linting, "
        "Dockerfile, CODEOWNERS, README. Use when starting a new service or library.",
        "I'm starting a new python service, what should the repo look like from day one",
    ),
    _s(
        "monorepo-migration",
        "devex",
        "Plans moving several repositories into a monorepo (or splitting one): history "
        "preservation, build tooling, CI, ownership. Use when consolidating repos.",
        "we have 14 small frontend repos and want one repo with nx or turborepo",
    ),
    _s(
        "codeowners-setup",
        "devex",
        "Sets up CODEOWNERS so the right people review each part of the code, with team "
        "handles and required reviews. Use when reviews go to the wrong people or nobody.",
        "PRs touching the payments folder should always need someone from the payments team",
        "reviews for the infra folder should go to the platform team automatically",
    ),
    _s(
        "branch-protection-setup",
        "devex",
        "Configures branch protection and merge rules: required checks, reviews, linear "
        "history, who may bypass. Use when setting up a repository's main branch rules.",
        "someone pushed straight to main and broke the build, lock it down",
        "require 2 approvals and passing checks before merging to main",
    ),
    _s(
        "git-history-cleanup",
        "devex",
        "Rewrites git history to remove large files or unwanted content with git filter-repo, "
        "and coordinates everyone re-cloning. Use when a repository is bloated by binaries.",
        "somebody committed 2GB of videos to the repo years ago and clones take forever",
    ),
    _s(
        "docker-image-slimming",
        "devex",
        "Reduces container image size and build time: multi-stage builds, smaller base images, "
        "layer ordering and .dockerignore. Use when images are huge or builds slow.",
        "our api docker image is 2.3GB, how do we make it smaller",
        "docker builds take 15 minutes because every change reinstalls dependencies",
    ),
    _s(
        "kubernetes-pod-crashloop",
        "devex",
        "Debugs pods stuck in CrashLoopBackOff or failing readiness: events, previous logs, "
        "OOMKilled, probes, config and secrets. Use when a Kubernetes workload won't start.",
        "the worker pod is in CrashLoopBackOff after I changed the config map",
        "kubectl says OOMKilled on restart, what do I look at",
    ),
    _s(
        "queue-backlog-drain",
        "devex",
        "Deals with a growing message queue backlog (SQS, RabbitMQ, Kafka lag): finding slow or "
        "failing consumers, scaling, dead-letter handling and replay. Use when messages pile up.",
        "there are 2 million messages stuck in the email queue and growing",
        "kafka consumer lag on the orders topic keeps climbing",
    ),
    _s(
        "cron-job-migration",
        "devex",
        "Moves cron jobs from a single server to a managed scheduler (Kubernetes CronJobs, "
        "cloud scheduler): inventory, locking, monitoring for missed runs. Use when retiring a "
        "box that runs crontabs.",
        "we have a crontab on an old VM that runs 20 jobs, we need to get rid of that VM",
    ),
    _s(
        "email-deliverability",
        "devex",
        "Fixes transactional email deliverability: SPF, DKIM, DMARC, bounces, sender reputation "
        "and provider settings. Use when emails go to spam or don't arrive.",
        "our password reset emails land in gmail spam",
    ),
    _s(
        "rate-limit-tuning",
        "devex",
        "Sets and adjusts API rate limits per client and endpoint: algorithms, headers, limits "
        "from real usage, and exemptions. Use when clients hit 429s or one client overloads the "
        "API.",
        "a customer's integration is getting 429 too many requests all day",
        "one tenant is hammering our API with 500 req/s, how do we throttle them fairly",
    ),
    # machine learning
    _s(
        "model-deployment",
        "ml",
        "Deploys a machine learning model to serving: packaging, shadow or canary traffic, "
        "latency budget, and rollback to the previous model. Use when a trained model goes to "
        "production.",
        "the new churn model is trained, how do we put it behind the prediction API safely",
    ),
    _s(
        "model-evaluation-report",
        "ml",
        "Writes an evaluation report comparing a candidate model with the production model: "
        "metrics per segment, error analysis, fairness checks. Use before deciding to replace a "
        "model.",
        "compare the new fraud model with the current one, including per-country results",
    ),
    _s(
        "llm-prompt-review",
        "ml",
        "Reviews an LLM prompt or agent setup: instructions, examples, injection risks, output "
        "format and an eval set to measure changes. Use when changing prompts of an LLM feature.",
        "can you look at the system prompt of our support bot, it keeps making up refund policies",
        "our summarizer prompt ignores the format we asked for, help me fix the prompt",
    ),
    _s(
        "training-data-labeling",
        "ml",
        "Organises data labelling: guidelines, labeller agreement, quality checks and vendor or "
        "in-house labelling. Use when a model needs new labelled data.",
        "we need 10k support tickets labelled by intent, how do we get consistent labels",
    ),
    _s(
        "model-drift-monitoring",
        "ml",
        "Monitors models in production for data and prediction drift, with alerts and "
        "retraining triggers. Use when model quality may degrade over time.",
        "our recommendation clicks dropped slowly over 3 months, is the model stale?",
        "input feature distributions look different from training data, should we alert on that",
    ),
    _s(
        "gpu-quota-request",
        "ml",
        "Requests GPU capacity: quota increases from the cloud provider, reservations, cost "
        "approval and scheduling on the shared cluster. Use when training needs more GPUs.",
        "I need 8 A100s for two weeks for fine-tuning, how do I get them",
    ),
    # compliance and the rest
    _s(
        "soc2-evidence-collection",
        "compliance",
        "Collects evidence for SOC 2 controls during the audit window: change management, "
        "access reviews, backups, incident records. Use when the auditors ask for evidence.",
        "the SOC 2 auditor wants proof that every prod change had an approved PR, for 25 samples",
        "auditors want screenshots of our access reviews and backup configs",
    ),
    _s(
        "change-advisory-approval",
        "compliance",
        "Gets approval for a high-risk change from the change advisory board: change request, "
        "risk rating, rollback plan and scheduling. Use when a change requires formal approval "
        "before execution.",
        "the core network switch replacement needs CAB approval, what do I fill in",
    ),
    _s(
        "open-source-release",
        "compliance",
        "Open-sources an internal project: licence choice, secret and history scan, legal "
        "approval, contribution guidelines and maintainers. Use when publishing code publicly.",
        "we want to publish our internal terraform modules on github, what needs to happen first",
    ),
    _s(
        "hackathon-planning",
        "process",
        "Organises an internal hackathon: theme, dates, teams, judging criteria, demo day and "
        "what happens to winning projects. Use when planning a hack week.",
        "we want a hack week in september, help me plan it",
    ),
    _s(
        "tech-talk-prep",
        "people",
        "Prepares a technical talk or internal brown-bag: audience, story, slides, live demo "
        "fallback and rehearsal. Use when someone has to present a technical topic.",
        "I'm giving a 20 minute talk on our search rewrite at the all hands, how should I "
        "structure it",
    ),
    _s(
        "api-key-issuance",
        "security",
        "Issues API keys to customers or internal services: scopes, expiry, storage, how they "
        "are shown once, and revocation. Use when someone needs a new API key.",
        "a customer needs a key that can only read invoices, how do I generate it",
    ),
    _s(
        "maintenance-window-notice",
        "incident",
        "Schedules planned maintenance and notifies customers ahead of time: window choice, "
        "notice periods, status page scheduled maintenance and reminders. Use before planned "
        "downtime.",
        "we need 2 hours of downtime for the db upgrade on saturday, how much notice and where do "
        "we announce",
        "tell customers about the planned API downtime next weekend",
    ),
)

SKILLS: tuple[SkillSpec, ...] = _OPS_AND_PEOPLE + _BUILD_AND_BUSINESS


# -- writing ------------------------------------------------------------------------------------


def _title(name: str) -> str:
    words = name.split("-")
    return " ".join([words[0].capitalize(), *words[1:]])


def _frontmatter(spec: SkillSpec, owner: str, version: str) -> str:
    # JSON strings are valid YAML double-quoted scalars, so no quoting rule can be got wrong.
    lines = [
        "---",
        f"name: {spec.name}",
        f"description: {json.dumps(spec.description, ensure_ascii=False)}",
        "metadata:",
        f"  author: {json.dumps(owner)}",
        f"  version: {json.dumps(version)}",
        f"  area: {json.dumps(spec.area)}",
    ]
    if spec.area in CODE_AREAS:
        lines.append(f"allowed-tools: {CODE_TOOLS}")
    lines.append("---")
    return "\n".join(lines)


def render_skill(spec: SkillSpec, rng: random.Random) -> str:
    """The SKILL.md text of one skill: frontmatter, then a short playbook body."""
    owner = rng.choice(OWNERS)
    version = f"1.{rng.randint(0, 6)}"
    steps = list(AREA_STEPS[spec.area])
    middle = steps[1:-1]
    rng.shuffle(middle)
    steps = [steps[0], *middle, steps[-1]]
    body = [
        f"# {_title(spec.name)}",
        "",
        spec.description,
        "",
        "## Steps",
        "",
        *(f"{i}. {step}" for i, step in enumerate(steps, 1)),
        "",
        "## Output",
        "",
        AREA_OUTPUT[spec.area],
        "",
        "Ask for what is missing in one short message before starting; keep replies short "
        "enough to read in a chat thread.",
    ]
    return _frontmatter(spec, owner, version) + "\n\n" + "\n".join(body) + "\n"


def _check(spec: SkillSpec) -> None:
    if not NAME_RE.match(spec.name) or len(spec.name) > 64:
        raise ValueError(f"bad skill name {spec.name!r}")
    if not 1 <= len(spec.description) <= 1024:
        raise ValueError(f"{spec.name}: description of {len(spec.description)} characters")
    if not spec.queries:
        raise ValueError(f"{spec.name}: no query")


def write_corpus(root: Path, seed: int = 0) -> list[Query]:
    """Write the 200 skills under `root` (`root/NAME/SKILL.md`) and `root/queries.json`.

    Returns the queries, shuffled by `seed` (the same order as in queries.json). Existing files
    of the same names are overwritten; nothing else under `root` is touched.
    """
    names = [spec.name for spec in SKILLS]
    if len(set(names)) != len(names):
        raise ValueError("duplicate skill names in the corpus")
    rng = random.Random(seed)
    for spec in SKILLS:
        _check(spec)
        folder = root / spec.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "SKILL.md").write_text(render_skill(spec, rng), encoding="utf-8")
    out = [Query(text, spec.name) for spec in SKILLS for text in spec.queries]
    texts = [q.text for q in out]
    if len(set(texts)) != len(texts):
        raise ValueError("duplicate query texts in the corpus")
    rng.shuffle(out)
    (root / "queries.json").write_text(
        json.dumps([{"text": q.text, "skill": q.skill} for q in out], indent=1, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the skills index benchmark corpus.")
    parser.add_argument("dir", type=Path, help="where to write NAME/SKILL.md and queries.json")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    written = write_corpus(args.dir, args.seed)
    print(f"{len(SKILLS)} skills and {len(written)} queries written to {args.dir}")


if __name__ == "__main__":
    main()
