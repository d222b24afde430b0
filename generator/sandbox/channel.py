"""One run's own channel, as the evaluating process holds it: a request pipe it reads, a response
pipe it writes, made for that run and closed when it ends.

Nothing a run leaves behind -- answers it never read, half a frame, requests sent after it
returned, a pipe end handed to a process that outlived it -- can reach the next run or the next
candidate on a pooled host: they all go with the run's pipes. The run's ends travel to the
sandbox host with the run's start command ("R", SCM_RIGHTS over the host's unix control socket).
"""

from __future__ import annotations

import os
import selectors
import socket

from generator.sandbox.streams import FRAME, MAX_JSON, seed_message
from generator.sandbox.wire import Command, Request


class ProtocolError(Exception):
    """The run sent something the wire format does not allow: its candidate fails."""


class RunChannel:
    """The evaluator's ends of one run's request and response pipes (see the module docstring)."""

    def __init__(self, sel: selectors.BaseSelector, seed_rows=()):
        self.sel = sel
        self.req, req_w = os.pipe()
        resp_r, self.resp = os.pipe()
        # A hybrid run's seeds reach this run only: the first thing in its response pipe, before any
        # answer. The sandbox host never holds them, so no run can find another run's seeds in memory
        # it inherited; they come in the order they were evaluated, not ranked by their values.
        os.write(self.resp, seed_message(seed_rows))
        for fd in (self.req, self.resp):  # a run that never reads its answers must not block us
            os.set_blocking(fd, False)
        sel.register(self.req, selectors.EVENT_READ)
        self.buf = b""
        self._run_ends = [req_w, resp_r]

    def hand_over(self, ctl: socket.socket) -> None:
        """Send the run's ends to the sandbox host with its start command, then drop our copies."""
        try:
            socket.send_fds(ctl, [Command.RUN], self._run_ends)
        except OSError:
            pass  # the host died; the evaluator's loop reports it
        finally:
            for fd in self._run_ends:
                os.close(fd)
            self._run_ends = []

    def frames(self) -> list | None:
        """The complete frames that have arrived, as (type, int, JSON bytes or None); None when
        nothing could be read. Half a frame waits here for its rest, and dies with the channel."""
        try:
            data = os.read(self.req, 65536)
        except BlockingIOError:
            return None
        if not data:
            return None
        buf, out, pos = self.buf + data, [], 0
        while len(buf) - pos >= FRAME.size:
            kind, arg = FRAME.unpack_from(buf, pos)
            if kind != Request.JSON:
                out.append((kind, arg, None))
                pos += FRAME.size
                continue
            if not 0 <= arg <= MAX_JSON:
                raise ProtocolError("oversized message")
            if len(buf) - pos < FRAME.size + arg:
                break
            out.append((kind, arg, buf[pos + FRAME.size : pos + FRAME.size + arg]))
            pos += FRAME.size + arg
        self.buf = buf[pos:]
        return out

    def answer(self, frame: bytes) -> None:
        """Write one answer; a run that sent requests without reading the answers breaks the protocol."""
        try:
            os.write(self.resp, frame)
        except BlockingIOError:
            raise ProtocolError("requests sent without reading the answers") from None
        except BrokenPipeError:
            pass

    def close(self) -> None:
        """Close both pipes (and the run's ends if they were never handed over)."""
        try:
            self.sel.unregister(self.req)
        except (KeyError, ValueError):
            pass
        for fd in [self.req, self.resp, *self._run_ends]:
            try:
                os.close(fd)
            except OSError:
                pass
        self._run_ends = []
