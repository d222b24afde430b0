"""llm_guided: the LLM proposes configurations directly, round after round; hybrids and campaign seeds.

Imports tasks, scoring, evaluation (seeded runs), llm and the archive (recorded exchanges).
"""
