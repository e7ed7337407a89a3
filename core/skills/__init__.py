"""Skills: team playbooks as SKILL.md folders, loaded progressively (see service.py)."""
