"""Tunesmith: generates optimization algorithms for GPU auto-tuning.

Rooms, from the bottom up (a room imports only those before it; tests/test_architecture.py checks it, and
tests/test_layout_docs.py that this list and docs/reference/repository-layout.md name every room):
resources, parsing, errors, interrupts, config, jsonl -> tasks -> scoring -> sandbox -> live -> evaluation ->
llm -> archive, run_lock -> guided -> tuning -> campaign -> export -> review -> bench -> kernels -> cli and
cli_scoring (and the README's documented re-export paths: adapters, hpo, live_eval, live_tasks, synth).
"""

import os

# litellm fetches its model cost map from the network at import unless told otherwise; there is
# no network here and users must not depend on one, so use the map bundled with the package.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__version__ = "0.1.0"
