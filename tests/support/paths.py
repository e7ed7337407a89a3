"""Where the suite's files are, for tests that run scripts or read sample data."""

from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parents[2]
TESTS_DIR = ROOT_DIR / "tests"
FAKES_DIR = TESTS_DIR / "support" / "fakes"
FIXTURES_DIR = TESTS_DIR / "fixtures"
