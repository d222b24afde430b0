"""The sandbox's message types are named once (sandbox.wire) and keep the bytes on the wire: a frame
packed with a member is the frame packed with its byte, and no module writes a type byte or a JSON
kind as a bare literal any more."""

import ast
import json
import os
import struct
from pathlib import Path

from generator.sandbox import wire
from generator.sandbox.streams import ANSWER, FRAME, send_json
from generator.sandbox.wire import Answer, Command, HostEvent, Request, RunEvent

SANDBOX = Path(wire.__file__).parent


def test_the_members_are_the_bytes_and_strings_on_the_wire():
    assert {m.name: m.value for m in Request} == {"EVALUATE": b"E", "LOCAL": b"L", "JSON": b"J", "DONE": b"D"}
    assert {m.name: m.value for m in Answer} == {"VALUE": b"V", "STOP": b"S"}
    assert {m.name: m.value for m in Command} == {"RUN": b"R", "ABORT": b"A"}
    assert [m.value for m in RunEvent] == ["start", "error", "setup-error"]
    assert [m.value for m in HostEvent] == ["ready", "began", "exited", "idle"]


def test_frames_packed_with_members_are_the_old_frames():
    assert FRAME.pack(Request.EVALUATE, 7) == b"E" + struct.pack("<i", 7)
    assert FRAME.pack(Request.DONE, 0) == b"D\0\0\0\0"
    assert ANSWER.pack(Answer.STOP, 0.0, 0.5) == b"S" + struct.pack("<dd", 0.0, 0.5)
    kind, value, _ = ANSWER.unpack(ANSWER.pack(Answer.VALUE, 1.5, 0.25))
    assert kind == Answer.VALUE and kind is not Answer.VALUE and value == 1.5  # what a reader gets compares equal
    r, w = os.pipe()
    try:
        send_json(w, {"t": RunEvent.SETUP_ERROR, "message": "x"})
        data = os.read(r, 1024)
    finally:
        os.close(r)
        os.close(w)
    body = b'{"t": "setup-error", "message": "x"}'
    assert data == b"J" + struct.pack("<i", len(body)) + body
    assert json.loads(body)["t"] == RunEvent.SETUP_ERROR


def _bare_literals(path: Path) -> list[str]:
    """One-byte type codes and "t" kinds written as literals (the docstrings aside)."""
    codes = {m.value for e in (Request, Answer, Command) for m in e}
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes) and node.value in codes:
            found.append(f"{path.name}:{node.lineno} {node.value!r}")
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "t" and isinstance(value, ast.Constant):
                    found.append(f"{path.name}:{node.lineno} t={value.value!r}")
        if isinstance(node, ast.Compare) and any(
            isinstance(c, ast.Constant) and c.value in {m.value for e in (RunEvent, HostEvent) for m in e}
            for c in node.comparators
        ):
            found.append(f"{path.name}:{node.lineno} compares with a bare kind")
    return found


def test_no_sandbox_module_writes_a_message_type_as_a_bare_literal():
    modules = ["host.py", "child.py", "candidate_run.py", "channel.py", "streams.py"]
    bad = [hit for name in modules for hit in _bare_literals(SANDBOX / name)]
    assert not bad, bad
