"""Where things are, for tests in any folder under tests/ (a test's own `__file__` depends on its room)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout
TESTS = ROOT / "tests"
TEST_DATA = TESTS / "data"  # recorded replies, fake engines, Kernel Tuner caches: the tests' own data
HOSTILE_DIR = TESTS / "hostile"  # deliberately hostile candidates
