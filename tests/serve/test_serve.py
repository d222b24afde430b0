"""`tunesmith serve`: the live view's JSON routes on a run being written, and that it never writes the run.

The page itself is driven in a real browser in tests/serve/test_serve_browser.py.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from support.run_fixture import SPEC, build_run, grow_run

from generator.cli import main
from generator.serve.server import make_server


@pytest.fixture
def serving(tmp_path):
    """Serve the tiny run (first 3 candidates, a torn last line) on a free loopback port."""
    run = build_run(tmp_path, torn_tail=True, upto=3)
    server = make_server([run], port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield run, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _snapshot(run: Path) -> dict:
    return {str(p.relative_to(run)): (p.stat().st_size, p.stat().st_mtime_ns) for p in run.rglob("*")}


def test_overview_follows_a_run_as_it_grows(serving):
    run, url = serving
    status, first = _get(f"{url}/api/run/0")
    assert status == 200
    assert [n["id"] for n in first["nodes"]] == ["c0001", "c0002", "c0003"]  # the torn line is not a candidate
    assert [r["id"] for r in first["leaderboard"]] == ["c0003", "c0001"]
    assert first["failures"]["total"] == {"runtime": 1}
    assert first["run"]["best_path"] == ["c0001", "c0003"]
    assert first["usage"]["calls"] == 3
    # nothing new: the page's poll is answered without reading the run again
    assert _get(f"{url}/api/run/0?since={first['version']}")[1] == {"unchanged": True, "version": first["version"]}

    (run / "candidates.jsonl").write_text((run / "candidates.jsonl").read_text().rsplit("\n", 1)[0] + "\n")
    grow_run(run)  # the campaign goes on: four more candidates land
    status, later = _get(f"{url}/api/run/0?since={first['version']}")
    assert status == 200 and later["version"] != first["version"]
    assert len(later["nodes"]) == len(SPEC)
    assert later["leaderboard"][0]["id"] == "c0005" and later["run"]["best_path"] == ["c0001", "c0003", "c0005"]
    assert later["failures"]["total"] == {"runtime": 1, "timeout": 1}
    assert [p["best"] for p in later["convergence"]] == [0.30, 0.30, 0.45, 0.45, 0.52, 0.52, 0.52]


def test_candidate_route_gives_code_scores_and_diff(serving):
    run, url = serving
    status, c = _get(f"{url}/api/run/0/candidate/c0003")
    assert status == 200
    assert c["parents"] == ["c0001"] and c["score"] == 0.45
    assert "get_random_sample(20)" in c["code"]
    assert "+        for cfg in searchspace.get_random_sample(20):" in c["diffs"]["c0001"]
    assert _get(f"{url}/api/run/0/candidate/c0007")[0] == 404  # not landed yet
    assert _get(f"{url}/api/run/1")[0] == 404
    assert _get(f"{url}/api/run/0/candidate/..%2F..%2Fetc")[0] == 404


def test_serving_never_writes_the_run(serving):
    run, url = serving
    before = _snapshot(run)
    for path in ("/", "/serve.js", "/api/runs", "/api/run/0", "/api/run/0/candidate/c0001"):
        with urllib.request.urlopen(url + path, timeout=10) as response:
            assert response.status == 200
            assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert _snapshot(run) == before


def test_serve_refuses_a_folder_without_a_run(tmp_path, capsys):
    assert main(["serve", str(tmp_path), "--port", "0"]) != 0
    err = capsys.readouterr().err
    assert "not a Tunesmith run directory" in err and err.count("\n") == 1


def test_serve_refuses_a_busy_port(tmp_path, capsys):
    run = build_run(tmp_path)
    server = make_server([run], port=0)
    try:
        assert main(["serve", str(run), "--port", str(server.server_address[1])]) != 0
    finally:
        server.server_close()
    err = capsys.readouterr().err
    assert "choose another --port" in err and err.count("\n") == 1


def test_loopback_by_default():
    from generator.cli import _build_parser

    args = _build_parser().parse_args(["serve", "RUN"])
    assert args.host == "127.0.0.1" and os.path.basename(args.run_dirs[0]) == "RUN"


def test_a_stop_ends_the_server_in_seconds_and_says_how_to_show_the_runs_again(tmp_path):
    run = build_run(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "generator.cli", "serve", str(run), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "serving 1 run at http://127.0.0.1:" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        _, err = proc.communicate(timeout=30)
        assert time.monotonic() - start < 10
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert f"to continue: tunesmith serve {run} --port 0" in err and err.count("\n") == 1
