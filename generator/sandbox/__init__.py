"""Sandbox: untrusted optimizer code in an isolated process; the oracle stays on this side.

The host and child processes, their wire messages (wire.py), the operating-system walls. Imports `tasks`,
`scoring` and `candidate` (the static checks live there); never the LLM, the live GPU layer or the loop
(live tasks hand in an oracle factory).
"""
