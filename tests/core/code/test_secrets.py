"""Credentials never leave the repository: secret files by name (`.envrc`, PuTTY keys) are not
indexed, listed, searched or read, and keys, tokens and passwords inside ordinary files are
redacted in stored chunks (so in embeddings), in read_file, grep_code and search_code output,
and in the answer a question gets without a model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.code.answers import HEADER
from core.code.redact import REDACTED
from tests.conftest import POLICY_ALL, BotHarness
from tests.core.code.test_code import roomy, tool_results
from tests.support.code_repo import write
from tests.support.fakes.openai_server import FakeOpenAI

MakeBot = Callable[..., BotHarness]

AWS_SECRET = "q8Zr3kT0vYb1N6xWmPpL2sJd9HfGc4Ae7uQiKo5R"
ENVRC_SECRET = "Wv7Hq2Lm9Xc4Rt8Bn1Kp6Zs3Dj0Fg5Ya8Ue2Io4P"
PPK_SECRET = "AAAAB3NzaC1yc2EAAAADAQABAAABAQCnPpKeyMaterial0123456789"
DB_PASSWORD = "n7Vq!x2Lp9-prod"
KEY_LINE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
SECRETS = (AWS_SECRET, ENVRC_SECRET, PPK_SECRET, DB_PASSWORD, KEY_LINE)

UPLOADS_PY = f'''"""Uploading nightly backups of the billing database to object storage."""

import boto3

AWS_ACCESS_KEY_ID = "AKIAZ5MHLQ2X7RN4TYUE"
AWS_SECRET_ACCESS_KEY = "{AWS_SECRET}"
DATABASE_URL = "postgres://billing:{DB_PASSWORD}@db.internal:5432/billing"


def upload_nightly_backup(path: str, bucket: str) -> None:
    """Send the nightly database backup to the S3 bucket with the aws access key."""
    client = boto3.client(
        "s3", aws_access_key_id=AWS_ACCESS_KEY_ID, aws_secret_access_key=AWS_SECRET_ACCESS_KEY
    )
    client.upload_file(path, bucket, path)
'''
TLS_PY = f'''"""The TLS key of the webhook receiver (it should not be here, but it is)."""

WEBHOOK_TLS_KEY = """-----BEGIN RSA PRIVATE KEY-----
{KEY_LINE}
MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu
-----END RSA PRIVATE KEY-----"""


def webhook_tls_key() -> str:
    return WEBHOOK_TLS_KEY
'''


def make_ops_repo(base: Path) -> Path:
    root = base / "ops"
    write(root, "backups/uploads.py", UPLOADS_PY)
    write(root, "tls.py", TLS_PY)
    write(root, ".envrc", f"export AWS_SECRET_ACCESS_KEY={ENVRC_SECRET}\n# aws access key\n")
    write(
        root,
        "keys/deploy.ppk",
        f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPublic-Lines: 1\n{PPK_SECRET}\n",
    )
    write(root, "README.md", "# ops\n\nNightly backups to S3 with the aws access key.\n")
    return root


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


async def ops_bot(make_bot: MakeBot, tmp_path: Path, **settings: object) -> BotHarness:
    bot = make_bot(**settings)
    repo = await bot.app.repos.register(str(make_ops_repo(tmp_path / "src")))
    report = await bot.app.indexer.index(repo)
    assert report.vectors_error is None, report.vectors_error
    return bot


async def test_exact_tools_never_show_secret_files_or_values(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await ops_bot(
        make_bot,
        tmp_path,
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(roomy(POLICY_ALL)),
    )

    listed, grepped, by_value, probe, both, envrc, ppk, uploads, tls = await tool_results(
        bot,
        fake_llm,
        ("glob_files", {"pattern": "**/*"}),
        ("grep_code", {"pattern": "AWS_SECRET_ACCESS_KEY|PRIVATE KEY|postgres://"}),
        ("grep_code", {"pattern": "q8Zr3kT0|n7Vq!x2Lp9|MIIEvQIBADAN"}),
        ("grep_code", {"pattern": 'AWS_SECRET_ACCESS_KEY = "q8'}),  # guessing the secret
        ("grep_code", {"pattern": "AWS_SECRET_ACCESS_KEY = |q8Zr3kT0"}),
        ("read_file", {"repo": "ops", "path": ".envrc"}),
        ("read_file", {"repo": "ops", "path": "keys/deploy.ppk"}),
        ("read_file", {"repo": "ops", "path": "backups/uploads.py"}),
        ("read_file", {"repo": "ops", "path": "tls.py"}),
    )

    for result in (listed, grepped, by_value, probe, both, envrc, ppk, uploads, tls):
        assert_no_secret(result)
    assert set(listed.splitlines()) == {"## ops", "README.md", "backups/uploads.py", "tls.py"}
    assert f'6: AWS_SECRET_ACCESS_KEY = "{REDACTED}"' in grepped.splitlines()
    assert f'7: DATABASE_URL = "postgres://billing:{REDACTED}@db.internal:5432/billing"' in (
        grepped.splitlines()
    )
    # The key block's header is part of what is redacted: "PRIVATE KEY" matched only there.
    assert "tls.py" not in grepped
    assert ".envrc" not in grepped and "deploy.ppk" not in grepped
    # A line that matched only through its secret is withheld, redacted or not: otherwise a
    # pattern could probe the secret a character at a time. One that matches without it shows.
    assert by_value.startswith("No matches for")
    assert probe.startswith("No matches for")
    assert f'6: AWS_SECRET_ACCESS_KEY = "{REDACTED}"' in both.splitlines()
    assert envrc.startswith("Error: refused: .envrc looks like it holds secrets")
    assert ppk.startswith("Error: refused: keys/deploy.ppk looks like it holds secrets")
    assert f' 6 | AWS_SECRET_ACCESS_KEY = "{REDACTED}"' in uploads.splitlines()
    assert "15 |     client.upload_file(path, bucket, path)" in uploads.splitlines()
    assert tls.splitlines()[3:7] == [
        f' 3 | WEBHOOK_TLS_KEY = """{REDACTED}',
        f" 4 | {REDACTED}",
        f" 5 | {REDACTED}",
        f' 6 | {REDACTED}"""',
    ]


async def test_stored_chunks_and_search_code_hold_no_secret(
    make_bot: MakeBot, fake_llm: FakeOpenAI, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    from sqlmodel import select

    from core.store.models import CodeChunk, RepoFile

    bot = await ops_bot(
        make_bot,
        tmp_path,
        llm_base_url=fake_llm.url,
        llm_model="fake-model",
        llm_max_retries=0,
        policy_file=write_policy(roomy(POLICY_ALL)),
    )
    async with bot.app.db.session() as s:
        chunks = (await s.exec(select(CodeChunk))).all()
        files = {f.path for f in (await s.exec(select(RepoFile))).all()}
    assert files == {"README.md", "backups/uploads.py", "tls.py"}
    assert chunks
    for c in chunks:
        assert_no_secret(c.text + c.context + c.symbol)

    (found,) = await tool_results(
        bot, fake_llm, ("search_code", {"query": "aws secret access key for s3 backups"})
    )
    assert "backups/uploads.py" in found
    assert_no_secret(found)


async def test_without_a_model_a_question_gets_no_secret(
    make_bot: MakeBot, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    bot = await ops_bot(make_bot, tmp_path, policy_file=write_policy(POLICY_ALL))

    for question in (
        "which aws secret access key do the backups use?",
        "export AWS_SECRET_ACCESS_KEY",
        "the TLS private key of the webhook receiver",
        "PuTTY deploy key",
    ):
        reply = await bot.send(question)
        assert reply.text.startswith(HEADER), reply.text
        assert_no_secret(reply.text)


async def test_chunks_stored_before_redaction_are_remade_on_the_next_index(
    make_bot: MakeBot, write_policy: Callable[[str], Path], tmp_path: Path
) -> None:
    from sqlmodel import col, delete, select, update

    from core.store.models import CodeChunk, RepoChunkFormat

    bot = await ops_bot(make_bot, tmp_path, policy_file=write_policy(POLICY_ALL))
    # As an earlier version left them: the secret in the stored text, no format recorded.
    async with bot.app.db.session() as s:
        await s.exec(
            update(CodeChunk)
            .where(col(CodeChunk.path) == "backups/uploads.py")
            .values(text=f"AWS_SECRET_ACCESS_KEY = {AWS_SECRET!r}")
        )
        await s.exec(delete(RepoChunkFormat))
    # Until then, search redacts what it shows from them.
    found = await bot.app.search.search("aws secret access key for s3 backups", ["ops"], k=10)
    assert any(r.path == "backups/uploads.py" for r in found)
    for r in found:
        assert_no_secret(r.snippet)
    repo = await bot.app.repos.get("ops")
    assert repo is not None
    report = await bot.app.indexer.index(repo)  # no file changed
    assert report.vectors_error is None
    async with bot.app.db.session() as s:
        chunks = (await s.exec(select(CodeChunk))).all()
    assert any(c.path == "backups/uploads.py" for c in chunks)
    for c in chunks:
        assert_no_secret(c.text + c.context)
