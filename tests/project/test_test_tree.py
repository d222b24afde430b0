"""The test tree mirrors the rooms: each test file sits in the folder of the room it tests, under a name
unique across folders (pytest imports test files by their basename: the test folders have no __init__.py)."""

from collections import Counter

from support.paths import ROOT, TESTS

# Folders that are not a room of generator/: the house as a whole; the scripts and records of benchmarks/; the
# single-module rooms at the bottom (errors, interrupts, jsonl, parsing, run_lock, registry).
OTHER_FOLDERS = {"project", "benchmarks", "core"}
NOT_TESTS = {"data", "hostile", "support"}  # the tests' own data, hostile candidates, shared helpers


def _test_files():
    return [p for p in TESTS.rglob("test_*.py") if p.relative_to(TESTS).parts[0] not in NOT_TESTS]


def test_every_test_file_sits_in_the_folder_of_a_room():
    package = ROOT / "generator"
    rooms = {p.name for p in package.iterdir() if p.is_dir() and not p.name.startswith("_")}
    rooms |= {p.stem for p in package.glob("*.py")} | OTHER_FOLDERS
    misplaced = [
        str(p.relative_to(TESTS))
        for p in _test_files()
        if len(p.relative_to(TESTS).parts) != 2 or p.parent.name not in rooms
    ]
    assert not misplaced, f"move these into tests/<room>/ (the folder of the room each tests): {misplaced}"


def test_test_file_names_are_unique_across_folders():
    counts = Counter(p.name for p in _test_files())
    assert [name for name, n in counts.items() if n > 1] == []
