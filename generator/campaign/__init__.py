"""Campaign: the evolutionary loop (evolution.py: operators, parents, survivors), the campaign end
to end (loop.py: config -> tasks -> prompts -> LLM -> evaluation -> archive, with resume), a
generation in flight (inflight.py, speculation.py) and near-copies and diversity (novelty.py).

Imports every room below it; nothing above (export, review, bench, the CLI).
"""
