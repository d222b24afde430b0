"""Bring your own kernel: an LLM makes a user's kernel tunable (a template), Tunesmith checks it inside
the sandbox's walls, writes it as a problem, builds its search space and tunes it.

The top room: it uses `tasks` (problem specs), `sandbox` (the walls), `live` (cache files), `llm`
(the client with record/replay) and `bench` (running the best shipped optimizer on the space).
"""
