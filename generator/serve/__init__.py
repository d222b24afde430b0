"""The live view (`tunesmith serve RUN_DIR ...`): a local web page that follows campaigns as they run.

`data` reads a run directory into the JSON the page polls (through `review.lineage.Lineage`, so a run
being written reads as far as it got; nothing is ever written into the run); `server` is the
standard library's HTTP server with the page, its script and the JSON routes; `command` is the
subcommand. May import every room below it; nothing imports it but the command line.
"""
