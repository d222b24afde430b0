"""Documented import path of the offline synthesizer (`generator.synth.register()`); the code lives
in `generator.llm.synth`."""

from generator.llm.synth import register  # noqa: F401
