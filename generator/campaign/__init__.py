"""Campaign: the evolutionary loop (evolution.py: operators, parents, survivors), the campaign end
to end (loop.py: config -> tasks -> prompts -> LLM -> evaluation -> archive, with resume; run.py:
starting and resuming it; stages.py: HPO, validation and the sealed test after it), a generation in
flight (inflight.py, speculation.py; port.py: what it may ask of the campaign), near-copies
(novelty.py), the code diversity per generation (diversity.py) and the progress bars (progress.py).

Imports every room below it; nothing above (export, review, bench, the CLI).
"""
