"""SKILL.md frontmatter rules (core/skills/format.py) and loading folders (library.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.skills.format import MAX_SKILL_BYTES, SkillFormatError, parse_skill
from core.skills.library import SHIPPED_DIR, SkillFileError, SkillLibrary, default_folders


def doc(front: str, body: str = "Do the thing.") -> str:
    return f"---\n{front}\n---\n{body}\n"


def write_skill(root: Path, folder: str, text: str) -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / folder / "SKILL.md").write_text(text, encoding="utf-8")
    return root / folder


def test_a_valid_skill_parses() -> None:
    parsed = parse_skill(
        doc(
            "name: pdf-tools\ndescription: Fill PDF forms. Use when a PDF is mentioned.\n"
            "license: Apache-2.0\ncompatibility: needs nothing\n"
            'metadata:\n  author: me\n  version: "1.0"\nallowed-tools: grep_code read_file\n'
            "channels: [C1, 42]"
        ),
        "pdf-tools",
    )
    assert parsed.meta.name == "pdf-tools"
    assert parsed.meta.allowed_tools == ["grep_code", "read_file"]
    assert parsed.meta.channels == ["C1", "42"]
    assert parsed.meta.metadata == {"author": "me", "version": "1.0"}
    assert parsed.body == "Do the thing."
    assert parsed.warnings == ()


def test_other_agents_keys_load_with_a_warning() -> None:
    parsed = parse_skill(
        doc("name: a\ndescription: d\ndisable-model-invocation: true\nargument-hint: x"), "a"
    )
    assert parsed.meta.name == "a"
    assert parsed.warnings == (
        "key 'argument-hint' is not used by Threadline",
        "key 'disable-model-invocation' is not used by Threadline",
    )


def test_allowed_tools_as_a_yaml_list() -> None:
    parsed = parse_skill(doc("name: a\ndescription: d\nallowed-tools: [grep_code, 'read_*']"), "a")
    assert parsed.meta.allowed_tools == ["grep_code", "read_*"]


@pytest.mark.parametrize(
    ("text", "folder", "reason"),
    [
        ("no frontmatter here", "a", "must start with YAML frontmatter"),
        ("---\nname: a\ndescription: d\n", "a", "must start with YAML frontmatter"),
        (doc("name: [a\ndescription: d"), "a", "not valid YAML (line"),
        (doc("- a\n- b"), "a", "must be a YAML mapping"),
        (doc("description: d"), "a", "name is required"),
        (doc("name: a"), "a", "description is required"),
        (doc("name: a\ndescription: ''"), "a", "description must not be empty"),
        (doc("name: a\ndescription: '   '"), "a", "description must not be blank"),
        (doc("name: a\ndescription: " + "x" * 1025), "a", "at most 1024 characters"),
        (doc("name: " + "a" * 65 + "\ndescription: d"), "a" * 65, "at most 64 characters"),
        (doc("name: PDF\ndescription: d"), "PDF", "lowercase letters, digits"),
        (doc("name: -pdf\ndescription: d"), "-pdf", "no leading, trailing or double hyphen"),
        (doc("name: pdf-\ndescription: d"), "pdf-", "no leading, trailing or double hyphen"),
        (doc("name: pdf--x\ndescription: d"), "pdf--x", "no leading, trailing or double hyphen"),
        (doc("name: pdf_x\ndescription: d"), "pdf_x", "lowercase letters, digits"),
        (doc("name: other\ndescription: d"), "pdf", "must equal its folder's name 'pdf'"),
        (doc("name: 12\ndescription: d"), "12", "name must be a string, not int"),
        (doc("name: a\ndescription: d\nmetadata: [x]"), "a", "metadata must be a mapping"),
        (doc("name: a\ndescription: d\nmetadata:\n  v: 1.0"), "a", "metadata.v must be a string"),
        (doc("name: a\ndescription: d\ncompatibility: ''"), "a", "compatibility must not be"),
        (doc("name: a\ndescription: d\ncompatibility: " + "x" * 501), "a", "at most 500"),
        (doc("name: a\ndescription: d\nallowed-tools: 5"), "a", "allowed-tools"),
    ],
)
def test_invalid_frontmatter_says_why(text: str, folder: str, reason: str) -> None:
    with pytest.raises(SkillFormatError) as err:
        parse_skill(text, folder)
    assert reason in str(err.value)


def test_over_long_skill_is_refused() -> None:
    with pytest.raises(SkillFormatError, match="the limit is"):
        parse_skill(doc("name: a\ndescription: d", "x" * MAX_SKILL_BYTES), "a")


def test_library_skips_broken_skills_and_reports_each_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    team = tmp_path / "team"
    write_skill(team, "good", doc("name: good\ndescription: Good one."))
    write_skill(team, "bad-yaml", "---\nname: [\n---\nbody")
    write_skill(team, "wrong", doc("name: other\ndescription: d"))
    (team / "binary").mkdir()
    (team / "binary" / "SKILL.md").write_bytes(b"\xff\xfe\x00bad")
    other = tmp_path / "other"
    write_skill(other, "good", doc("name: good\ndescription: A duplicate."))
    lib = SkillLibrary([team, other], shipped=None)
    problems = lib.load()
    assert [s.name for s in lib.all()] == ["good"]
    assert lib.get("good") is not None and lib.get("good").description == "Good one."  # type: ignore[union-attr]
    reasons = sorted(str(p) for p in problems)
    assert len(reasons) == 4
    assert any("bad-yaml" in r and "not valid YAML" in r for r in reasons)
    assert any("binary" in r and "not UTF-8" in r for r in reasons)
    assert any("duplicate name 'good'" in r for r in reasons)
    assert any("must equal its folder" in r for r in reasons)
    logged = len(caplog.records)
    lib.load()  # the same problems again: not logged again
    assert len(caplog.records) == logged


def test_team_skill_shadows_the_shipped_example(tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    write_skill(shipped, "triage", doc("name: triage\ndescription: Shipped."))
    team = tmp_path / "team"
    write_skill(team, "triage", doc("name: triage\ndescription: Ours."))
    lib = SkillLibrary([team, shipped], shipped=shipped)
    assert lib.load() == []
    skill = lib.get("triage")
    assert skill is not None and skill.description == "Ours." and not skill.shipped


def test_shipped_examples_load_cleanly() -> None:
    lib = SkillLibrary([SHIPPED_DIR])
    assert [p for p in lib.load() if p.error] == []
    names = {s.name for s in lib.all()}
    assert {"incident-triage", "release-notes", "code-review-checklist"} <= names
    for s in lib.all():
        assert s.shipped and any(f.startswith("references/") for f in s.files)


def test_default_folders_order_and_examples_switch(tmp_path: Path) -> None:
    extra = tmp_path / "mine"
    assert default_folders([extra], cwd=tmp_path) == [
        extra.resolve(),
        (tmp_path / "skills").resolve(),
        SHIPPED_DIR.resolve(),
    ]
    assert SHIPPED_DIR.resolve() not in default_folders(cwd=SHIPPED_DIR.parent, examples=False)


def test_refresh_notices_edits_additions_and_removals(tmp_path: Path) -> None:
    import os

    root = tmp_path / "skills"
    folder = write_skill(root, "a", doc("name: a\ndescription: First."))
    lib = SkillLibrary([root], shipped=None)
    lib.load()
    assert lib.refresh() is False
    (folder / "SKILL.md").write_text(doc("name: a\ndescription: Second, longer."))
    assert lib.refresh() is True
    assert lib.get("a").description == "Second, longer."  # type: ignore[union-attr]
    write_skill(root, "b", doc("name: b\ndescription: New."))
    st = root.stat()
    os.utime(root, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert lib.refresh() is True and lib.get("b") is not None
    (root / "b" / "SKILL.md").unlink()
    assert lib.refresh() is True and lib.get("b") is None


def test_read_file_is_confined_to_the_skill(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    folder = write_skill(root, "a", doc("name: a\ndescription: d"))
    (folder / "references").mkdir()
    (folder / "references" / "x.md").write_text("reference text")
    (folder / "bin.dat").write_bytes(b"\x00\x01\x02")
    (tmp_path / "secret.txt").write_text("top secret")
    (folder / "link.md").symlink_to(tmp_path / "secret.txt")
    lib = SkillLibrary([root], shipped=None)
    lib.load()
    skill = lib.get("a")
    assert skill is not None
    assert skill.files == ("references/x.md",)  # what can be read, and only that
    assert SkillLibrary.read_file(skill, "references/x.md") == "reference text"
    assert SkillLibrary.read_file(skill, "./references/x.md") == "reference text"
    for path, reason in [
        ("../../secret.txt", "outside the skill's folder"),
        (str(tmp_path / "secret.txt"), "outside the skill's folder"),
        ("link.md", "symbolic link"),
        ("references/../../../secret.txt", "outside the skill's folder"),
        ("nope.md", "has no file 'nope.md'"),
        ("bin.dat", "not a text file"),
        ("", "give a file path"),
        ("references", "has no file"),
    ]:
        with pytest.raises(SkillFileError, match=reason):
            SkillLibrary.read_file(skill, path)
    (folder / "big.md").write_text("y" * 5000)
    assert SkillLibrary.read_file(skill, "big.md", max_bytes=100).endswith("[cut at 100 bytes]")
