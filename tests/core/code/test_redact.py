"""Secrets found by content (core/code/redact.py): every detector on a sample of its format,
whole private-key blocks, line numbers kept, and ordinary code left alone."""

from __future__ import annotations

import pytest

from core.code.redact import REDACTED, redact

# Made-up values in the shape of real ones (none of them is, or was, a live credential).
AWS_ID = "AKIAZ5MHLQ2X7RN4TYUE"
AWS_SECRET = "q8Zr3kT0vYb1N6xWmPpL2sJd9HfGc4Ae7uQiKo5R"
JWT = (
    "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAiMTIzNDU2Nzg5MCIsICJuYW1lIjogIkFubiJ9"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
KEY_BODY = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
    "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ",
]
PEM = ["-----BEGIN PRIVATE KEY-----", *KEY_BODY, "-----END PRIVATE KEY-----"]
ALNUM = "k3Q9vT1xB7mZ4pL8wN2cR6hJ0sD5fG"  # 30 characters, no words in them


def alnum(n: int) -> str:
    return (ALNUM * (n // len(ALNUM) + 1))[:n]


HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

SECRET_LINES = [
    # (file, line, the secret that must be gone)
    ("settings.py", f'AWS_ACCESS_KEY_ID = "{AWS_ID}"', AWS_ID),
    ("settings.py", f'aws_secret_access_key = "{AWS_SECRET}"', AWS_SECRET),
    ("deploy.sh", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    ("local_settings.py", 'DB_PASSWORD = "Tr0ub4dor&3x"', "Tr0ub4dor&3x"),
    ("app.py", 'connect(host="db", password="n7Vq!x2Lp9")', "n7Vq!x2Lp9"),
    ("config.yaml", "  password: Xk9#mQ2!vL", "Xk9#mQ2!vL"),
    ("main.go", 'password := "Xk9mQ2vL77"', "Xk9mQ2vL77"),
    ("client.js", 'const apiKey = "f3a9c1e07b5d4e2a9c8b";', "f3a9c1e07b5d4e2a9c8b"),
    ("api.py", 'headers = {"Authorization": "Bearer abcDEF1234567890ghiJKL"}', "abcDEF1234567890"),
    ("db.py", 'URL = "postgres://app:pa55w0rd@db.internal:5432/app"', "pa55w0rd"),
    ("cache.py", 'REDIS = "redis://:s3cr3tPw9@cache:6379/0"', "s3cr3tPw9"),
    ("db.py", 'DSN = "postgresql://u:p4ss!w0rd$x@h/db"', "p4ss!w0rd$x"),
    (
        "slack.py",
        'SLACK = "xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"',
        "AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    ("ci.py", 'GH = "ghp_' + "Ab1" * 12 + '"', "Ab1" * 12),
    ("ci.py", 'GH = "github_pat_11ABCDEFG0' + "x9Y" * 20 + '"', "x9Y" * 20),
    ("pay.py", 'stripe.api_key = "sk_live_' + "4eC39HqLyjWDarjtT1zdp7dc" + '"', "4eC39HqLyjWD"),
    ("auth.py", f'token = "{JWT}"', JWT.split(".")[2]),
    ("auth.py", f'token = "{JWT}"', JWT.split(".")[1]),
    ("maps.py", 'KEY = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"', "AIzaSyA1b2C3d4E5f6G7h8I9j0K"),
    ("llm.py", 'client = Anthropic(api_key="sk-ant-api03-' + "Zx8" * 10 + '")', "Zx8" * 10),
    (
        "mail.py",
        'SG = "SG.' + "a1B2c3D4e5F6g7H8i9J0kL" + "." + "m" * 20 + "N1o2P3q4R5s6T7u8V9w0X1y" + '"',
        "a1B2c3D4e5F6g7H8i9J0kL",
    ),
    ("sms.py", 'TWILIO = "SK' + "0123456789abcdef" * 2 + '"', "0123456789abcdef" * 2),
    ("npm.cfg", "//registry.npmjs.org/:_authToken=npm_" + "Q1w2E3r4T5" * 3, "Q1w2E3r4T5" * 3),
    (
        "hooks.py",
        'WEBHOOK = "whsec_' + "N0pQ1rS2tU3vW4xY5zA6bC7d" + '"',
        "N0pQ1rS2tU3vW4xY5zA6bC7d",
    ),
    ("az.cfg", f"DefaultEndpointsProtocol=https;AccountKey={alnum(86)}==", alnum(86)),
    ("bot.py", f'DISCORD = "N{alnum(23)}.{alnum(6)}.{alnum(27)}"', alnum(23)),
    ("ci.yml", f"  token: glpat-{alnum(20)}", alnum(20)),
    ("mail.py", f'MC = "{HEX[:32]}-us12"', HEX[:32]),
    ("ai.py", f'OPENAI = "sk-{alnum(20)}T3BlbkFJ{alnum(20)}"', f"{alnum(20)}T3BlbkFJ"),
    ("pypi.py", f'T = "pypi-AgEIcHlwaS5vcmc{alnum(70)}"', alnum(70)),
    ("sq.py", f'SQ = "sq0csp-{alnum(43)}"', alnum(43)),
    ("tg.py", f'TG = "123456789:{alnum(35)}"', alnum(35)),
    ("art.py", f'ART = "AKC{alnum(12)}"', alnum(12)),
    ("db.py", f'C = "https://acct:{HEX}@acct.cloudant.com"', HEX),
    (
        "hook.py",
        f'HOOK = "https://hooks.slack.com/services/T{alnum(8)}/B{alnum(8)}/{alnum(24)}"',
        alnum(24),
    ),
    ("app.py", f'APP = "xapp-1-A{alnum(10)}-1234567890123-{HEX[:40]}"', HEX[:40]),
    ("sms.py", f'TWILIO_SID = "AC{HEX[:32]}"', HEX[:32]),
    # high entropy, assigned to a secret-sounding name
    (
        "conf.py",
        'SIGNING_KEY = "9f86d081884c7d659a2feaa0c55ad015"',
        "9f86d081884c7d659a2feaa0c55ad015",
    ),
    (
        "conf.py",
        '{"client_secret": "hJ8s7Df6Gk5Lq4Wm3Zp2Xr1Tc0Vb9Ny"}',
        "hJ8s7Df6Gk5Lq4Wm3Zp2Xr1Tc0Vb9Ny",
    ),
]


@pytest.mark.parametrize(("path", "line", "secret"), SECRET_LINES)
def test_secrets_are_redacted(path: str, line: str, secret: str) -> None:
    text = f"# before\n{line}\n# after\n"
    out = redact(text, path)
    assert secret not in out
    assert REDACTED in out
    assert out.split("\n")[0] == "# before" and out.split("\n")[2] == "# after"
    assert out.count("\n") == text.count("\n")


def test_only_the_value_is_replaced() -> None:
    assert redact('DB_PASSWORD = "Tr0ub4dor&3x"', "a.py") == f'DB_PASSWORD = "{REDACTED}"'
    assert redact('U = "postgres://app:pa55w0rd@db/app"', "a.py") == (
        f'U = "postgres://app:{REDACTED}@db/app"'
    )
    two = redact('a(password="n7Vq!x2Lp9", secret="Zq8!kd72Lm")', "a.py")
    assert "n7Vq" not in two and "Zq8!" not in two


def test_a_private_key_block_is_redacted_whole_and_lines_stay() -> None:
    text = "\n".join(["KEY = '''", *PEM, "'''", "x = 1"]) + "\n"
    out = redact(text, "keys.py").split("\n")
    assert out[0] == "KEY = '''"
    assert out[1 : 1 + len(PEM)] == [REDACTED] * len(PEM)
    assert out[1 + len(PEM) :] == ["'''", "x = 1", ""]
    assert not any(body in "\n".join(out) for body in KEY_BODY)


def test_a_private_key_on_one_line_with_escapes() -> None:
    pem = "\\n".join(PEM) + "\\n"
    text = f'{{"type": "service_account", "private_key": "{pem}", "client_email": "a@b.c"}}'
    out = redact(text, "sa.json")
    assert out == (
        f'{{"type": "service_account", "private_key": "{REDACTED}\\n", "client_email": "a@b.c"}}'
    )


def test_putty_and_openssh_keys() -> None:
    putty = [
        "PuTTY-User-Key-File-2: ssh-rsa",
        "Encryption: none",
        "Comment: rsa-key-20240101",
        "Public-Lines: 2",
        *KEY_BODY[:2],
        "Private-Lines: 1",
        KEY_BODY[2],
        "Private-MAC: 5b1c0b5e8e9d3a6f7c2b1a0e9d8c7b6a5f4e3d2c",
    ]
    out = redact("\n".join(putty), "notes.txt").split("\n")
    assert out == [REDACTED] * len(putty)
    openssh = [
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        *KEY_BODY,
        "-----END OPENSSH PRIVATE KEY-----",
    ]
    assert redact("\n".join(openssh), "README.md").split("\n") == [REDACTED] * len(openssh)


@pytest.mark.parametrize(
    "line",
    [
        "password = get_password()",
        "token: str",
        "password: str = Field(min_length=8)",
        'if password == "":',
        'API_KEY = os.environ["API_KEY"]',
        'password = "changeme"',
        'secret = "${SECRET}"',
        'password = "<your password>"',
        'api_key = "your-api-key-here"',
        'SECRET_KEY_NAME = "DJANGO_SECRET_KEY"',
        "secret_type = 'JSON Web Token'",
        "if self.secrets_dir_missing == 'warn':",
        'private_key_sign_fn: "CustomPrivateKeySign",',
        'pkey = r"HARDWARE\\DESCRIPTION\\System\\CentralProcessor"',
        'engine = create_engine("postgresql://scott:tiger@localhost/test")',
        'url = "postgres://user:password@localhost/db"',
        'url = f"postgres://{user}:{password}@{host}/db"',
        'url = "https://docs.example.com/path@v2"',
        '"key_sha256": "bb1636883c2707b51c5b7fc26c6927af4430f2e0785a8c7bc886337f919f9edf"',
        'cache_key = "user:%s"',
        'PEM_HEADER = "-----BEGIN RSA PRIVATE KEY-----"',
        '    r"BEGIN RSA PRIVATE KEY",',
        "headers = {'Authorization': f'Bearer {token}'}",
        'token = request.headers["X-Token"]',
        "def check_password(stored_hash: str, salt: bytes, attempt: str) -> bool:",
        'session_id = "5f0c8a3e-1b2d-4c6e-8f9a-0b1c2d3e4f5a"',
    ],
)
def test_ordinary_code_is_left_alone(line: str) -> None:
    for path in ("a.py", "a.yaml", "a.sh"):
        assert redact(line, path) == line, path


def test_long_minified_lines_are_scanned_around_their_hits() -> None:
    filler = "var a=1;" * 5_000
    line = filler + 'var k={password:"n7Vq!x2Lp9"};' + filler
    out = redact(line, "bundle.js")
    assert "n7Vq!x2Lp9" not in out
    assert out == line.replace("n7Vq!x2Lp9", REDACTED)
    noise = "\x01" * 900_000
    assert redact(noise, "x.txt") is noise


def test_text_without_secrets_is_returned_as_is() -> None:
    text = "def f(x):\n    return x + 1\n"
    assert redact(text, "a.py") is text
    assert redact("", "a.py") == ""


LOG_SECRET_LINES = [
    # (line of a log, the secret that must be gone)
    (f"2026-12-03T10:00:01Z INFO boot AWS_SECRET_ACCESS_KEY={AWS_SECRET} region=eu", AWS_SECRET),
    ("ERROR login failed password=hunter2! user=bob", "hunter2!"),
    ("DEBUG refreshing token: abc123def456 scope=read", "abc123def456"),
    ("WARN retry client_secret=Zk29dh3kd9 attempt=2", "Zk29dh3kd9"),
    ('{"level": "debug", "apiKey": "ab12cd34ef", "msg": "call"}', "ab12cd34ef"),
    ("env DB_PASS=s3cr3t!x HOME=/root", "s3cr3t!x"),
]


@pytest.mark.parametrize(("line", "secret"), LOG_SECRET_LINES)
def test_key_value_pairs_in_logs_are_redacted(line: str, secret: str) -> None:
    text = f"first line\n{line}\nlast line"
    for out in (redact(text, "app.log"), redact(text, "app.log.1"), redact(text, "x", log=True)):
        assert secret not in out
        assert REDACTED in out
        assert out.split("\n")[0] == "first line" and out.split("\n")[2] == "last line"


@pytest.mark.parametrize(
    "line",
    [
        "INFO request done max_tokens=1024 tokens_used=93",
        "DEBUG token_count: 12 token_type=bearer",
        "INFO password_file=/etc/app/password.txt",
        "INFO secret_name=prod-db rotated",
        "WARN password=None",
        "DEBUG passenger=bob42 seat=12A",
        "INFO token: str",
    ],
)
def test_log_lines_about_secrets_are_left_alone(line: str) -> None:
    assert redact(line, "app.log") == line


def test_code_is_not_read_as_a_log() -> None:
    # The log rule applies to logs: in code, `name=value` assigns anything.
    for line in ("run(password=pw_from_vault2)", "compute(token=tok1)"):
        assert redact(line, "a.py") == line
