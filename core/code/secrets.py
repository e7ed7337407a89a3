"""Files that look like secrets: never indexed, listed, searched or read.

The check is on the repo-relative path only (names, extensions and well-known folders), so it
is cheap enough to run on every file of a walk and on every path ripgrep reports. Secrets
inside ordinary files are found by content instead (`core.code.redact`).

Left out on purpose, because they are mostly not secret and the content check covers them:
`*.asc` (armoured PGP: public keys and signatures far more often than private keys, whose
blocks are redacted by content), `*.tfvars` (the team's Terraform settings, committed on
purpose; a password in one is redacted by content), certificates (`*.crt`, `*.cer`: public).
"""

from __future__ import annotations

import re
from fnmatch import translate
from pathlib import PurePosixPath

# Matched against the file name, case-insensitively.
SECRET_NAMES = (
    # environment files
    ".env",
    ".env.*",
    "*.env",
    ".envrc",  # direnv: `export AWS_SECRET_ACCESS_KEY=...`
    # keys, keystores and certificates with their private key
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.p8",
    "*.jks",
    "*.keystore",
    "*.bks",
    "*.ppk",  # PuTTY private keys
    "*.keytab",
    "*.kdbx",
    "*.gpg",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*_rsa",
    "*_dsa",
    "*_ecdsa",
    "*_ed25519",
    "ssh_host_*_key",
    # credential stores of tools and clouds
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    "credentials.toml",  # cargo
    "credentials.ini",
    "credentials.csv",
    "credentials.xml",
    "credentials.txt",
    "credentials.db",  # gcloud
    "*credentials.json",  # gcloud's application_default_credentials.json, and the like
    "access_tokens.db",  # gcloud
    "accesstokens.json",  # azure cli (names are lower-cased before matching)
    "msal_token_cache.*",  # azure cli
    "service-account*.json",
    "kubeconfig",
    "kubeconfig.*",
    "*.kubeconfig",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
    "secrets.toml",
    "*.secret",
    "*.secrets",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".git-credentials",
    ".dockercfg",
    ".vault-token",
    ".terraformrc",
    "terraform.rc",
    "*.tfstate",  # Terraform state holds every resource's secrets in clear
    "*.tfstate.*",  # terraform.tfstate.backup, *.tfstate.d
)
# Templates people commit on purpose, with placeholders instead of values.
ALLOWED_NAMES = (".env.example", ".env.sample", ".env.template", ".env.dist")
# Any path through one of these folders.
SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".azure", ".kube", ".docker", ".password-store"})
# Any path through one of these folder sequences (`gcloud` alone is a common package name).
SECRET_DIR_PATHS = ((".config", "gcloud"), (".config", "gh"), ("gcloud", "legacy_credentials"))

# One pattern for all names: fnmatch per pattern would cost ~60 calls per file.
_SECRET_NAME = re.compile("|".join(translate(p) for p in SECRET_NAMES))


def looks_secret(path: str) -> bool:
    """Whether the repo-relative `path` ("a/b/c.pem") looks like it holds a secret."""
    parts = PurePosixPath(path.lower()).parts
    if not parts:
        return False
    folders = parts[:-1]
    if any(part in SECRET_DIRS for part in folders):
        return True
    if any(
        folders[i : i + len(seq)] == seq for seq in SECRET_DIR_PATHS for i in range(len(folders))
    ):
        return True
    name = parts[-1]
    if name in ALLOWED_NAMES:
        return False
    return _SECRET_NAME.match(name) is not None
