"""Sandbox: untrusted optimizer code in an isolated process; the oracle stays on this side.

Static checks, the host and child processes, the operating-system walls. Imports `tasks` and
`scoring`; never the LLM, the live GPU layer or the loop (live tasks hand in an oracle factory).
"""
