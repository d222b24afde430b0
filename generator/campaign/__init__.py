"""Campaign: the evolutionary loop (evolution.py: operators, parents, survivors) and the campaign
end to end (loop.py: config -> tasks -> prompts -> LLM -> evaluation -> archive, with resume).

Imports every room below it; nothing above (export, review, bench, the CLI).
"""
