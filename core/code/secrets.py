"""Files that look like secrets: never indexed, listed, searched or read.

The check is on the repo-relative path only (names, extensions and well-known folders), so it
is cheap enough to run on every file of a walk and on every line ripgrep reports.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import PurePosixPath

# Matched against the file name, case-insensitively.
SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.gpg",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    "credentials.csv",
    "credentials.xml",
    "*credentials.json",
    "service-account*.json",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
    "secrets.toml",
    "*.secret",
    "*.secrets",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".git-credentials",
    ".dockercfg",
    "terraform.tfstate*",
)
# Templates people commit on purpose, with placeholders instead of values.
ALLOWED_NAMES = (".env.example", ".env.sample", ".env.template", ".env.dist")
# Any path through one of these folders.
SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker"})


def looks_secret(path: str) -> bool:
    """Whether the repo-relative `path` ("a/b/c.pem") looks like it holds a secret."""
    parts = PurePosixPath(path.lower()).parts
    if not parts:
        return False
    if any(part in SECRET_DIRS for part in parts[:-1]):
        return True
    name = parts[-1]
    if name in ALLOWED_NAMES:
        return False
    return any(fnmatchcase(name, pattern) for pattern in SECRET_NAMES)
