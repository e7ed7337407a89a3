"""A fixture repository on disk, built in `tmp_path`: several languages, nested .gitignore
files, vendored and generated folders, a binary and an oversized file, secrets, and symlinks
that escape the root. `READABLE` is what the walk must yield from it, nothing more."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

NEEDLE = "retry_webhook"  # appears in readable code and in every file that must stay hidden
OUTSIDE_SECRET = "TOPSECRET-outside-the-repo"
ENV_SECRET = "sk-live-0000-in-dotenv"

READABLE = {
    ".env.example",
    ".gitignore",
    "README.md",
    "cmd/main.go",
    "lib/Thing.java",
    "src/app.py",
    "src/util.ts",
    "sub/.gitignore",
    "sub/code.rb",
    "sub/keep.log",
}

APP_PY = f'''"""Webhook delivery."""


def {NEEDLE}(event, attempts=3):
    for attempt in range(attempts):
        if deliver(event):
            return True
    return False


def deliver(event):
    return event is not None
'''


def git(root: Path, *args: str) -> str:
    """`git` in `root` with a throwaway identity (for commits); its output, stripped."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_repo(base: Path, name: str = "api") -> Path:
    root = base / name
    write(root, "src/app.py", APP_PY)
    write(root, "src/util.ts", f"export function callRetry() {{ return '{NEEDLE}'; }}\n")
    write(root, "cmd/main.go", 'package main\n\nfunc main() { println("hello") }\n')
    write(root, "lib/Thing.java", "public class Thing {\n  void run() {}\n}\n")
    write(root, "README.md", "# API\n\nSee `retry_webhook` in src/app.py.\n")
    write(root, ".gitignore", "*.log\ngenerated/\n")
    write(root, "app.log", f"{NEEDLE} in a log\n")  # ignored by the root .gitignore
    write(root, "generated/out.py", f"{NEEDLE} = 1\n")  # ignored folder
    write(root, "sub/.gitignore", "local.txt\n!keep.log\n")
    write(root, "sub/local.txt", f"{NEEDLE} local\n")  # ignored by the nested .gitignore
    write(root, "sub/keep.log", "kept by a nested negation\n")
    write(root, "sub/code.rb", "def hello\n  puts 'hi'\nend\n")
    write(root, "node_modules/pkg/index.js", f"function {NEEDLE}() {{}}\n")
    write(root, "dist/bundle.js", f"var {NEEDLE};\n")
    write(root, "src/__pycache__/app.cpython-311.pyc", f"{NEEDLE}\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0" + NEEDLE.encode())
    write(root, "big.txt", (NEEDLE + "\n") * 80_000)  # > 1 MB
    write(root, ".env", f"API_KEY={ENV_SECRET}\n# {NEEDLE}\n")
    write(root, ".env.example", "API_KEY=changeme\n")
    write(root, "deploy.pem", f"-----BEGIN PRIVATE KEY----- {NEEDLE}\n")
    write(root, "config/id_rsa", f"{NEEDLE} private key\n")
    write(root, "config/server.key", f"{NEEDLE}\n")
    outside = write(base, f"{name}-outside/secret.txt", f"{OUTSIDE_SECRET} {NEEDLE}\n")
    os.symlink(outside, root / "escape.txt")
    os.symlink(outside.parent, root / "escape_dir")
    os.symlink(root / ".env", root / "notes.txt")  # inside, but points at a secret
    return root
