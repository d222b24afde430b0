"""Campaign: the evolutionary loop (evolution.py: operators, parents, survivors), the campaign end
to end (loop.py: config -> tasks -> prompts -> LLM -> evaluation -> archive, with resume), a
generation in flight (inflight.py, speculation.py), near-copies (novelty.py), the code diversity
per generation (diversity.py) and the progress bars (progress.py).

Imports every room below it; nothing above (export, review, bench, the CLI).
"""
