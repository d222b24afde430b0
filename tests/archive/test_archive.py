"""The run directory: append, read back, survive torn lines, read as a DataFrame."""

import json

import pytest

from generator.archive import Archive, ArchiveError, Candidate
from generator.llm.records import Exchange


def _fill(archive):
    for i, (score, err) in enumerate([(0.3, None), (None, "exception"), (0.6, None)], 1):
        cid = f"c{i:04d}"
        archive.append_exchange(
            Exchange(id=f"x{i:04d}", purpose="generate:new", model="m", messages=[], reply="r", ref=cid)
        )
        path = archive.write_code(cid, f"class A{i}: pass\n")
        fit = {"score": score, "per_task": {"t/A": {"score": score, "std": 0.0, "fevals": 9}}} if score else None
        archive.append_candidate(
            Candidate(
                cid,
                0,
                "new",
                code_path=path,
                fitness=fit,
                exchange_id=f"x{i:04d}",
                error={"kind": err, "message": "boom"} if err else None,
                timings={"llm_s": 0.1, "eval_s": 1.0},
            )
        )


def test_write_and_read_back(tmp_path):
    archive = Archive.create(tmp_path / "run", {"name": "t"}, "name = 't'\n", "t")
    _fill(archive)
    again = Archive.open(tmp_path / "run")
    cands = again.candidates()
    assert [c.id for c in cands] == ["c0001", "c0002", "c0003"]
    assert cands[0].score == 0.3 and cands[1].score is None and cands[1].error["kind"] == "exception"
    assert cands[2].per_task == {"t/A": 0.6} and again.code(cands[2]) == "class A3: pass\n"
    assert [c.id for c in again.best(5)] == ["c0003", "c0001"]
    assert [x.id for x in again.exchanges()] == ["x0001", "x0002", "x0003"]
    assert again.config == {"name": "t"} and (tmp_path / "run" / "campaign.toml").read_text() == "name = 't'\n"
    df = again.dataframe()
    assert list(df["id"]) == ["c0001", "c0002", "c0003"] and df.loc[2, "score:t/A"] == 0.6
    assert df.loc[1, "error_kind"] == "exception" and df.loc[0, "eval_s"] == 1.0
    again.write_status({"state": "running"})
    assert again.status()["state"] == "running"


def test_torn_last_line_is_ignored_then_repaired(tmp_path):
    archive = Archive.create(tmp_path / "run", {})
    _fill(archive)
    with open(tmp_path / "run" / "candidates.jsonl", "a") as fh:
        fh.write('{"id": "c0004", "generation"')  # kill -9 in the middle of a write
    assert len(archive.candidates()) == 3
    archive.prepare_append()
    archive.append_candidate(Candidate("c0004", 1, "refine", ["c0003"]))
    assert [c.id for c in archive.candidates()] == ["c0001", "c0002", "c0003", "c0004"]
    lines = (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in lines)


def test_errors_name_the_directory(tmp_path):
    with pytest.raises(ArchiveError, match="not a Tunesmith run directory"):
        Archive.open(tmp_path)
    Archive.create(tmp_path / "run", {})
    with pytest.raises(ArchiveError, match="already holds a run"):
        Archive.create(tmp_path / "run", {})
    with pytest.raises(ArchiveError, match="no candidate 'c0099'"):
        Archive.open(tmp_path / "run").candidate("c0099")
