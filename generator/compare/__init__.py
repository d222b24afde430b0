"""Comparing generation methods (`tunesmith compare`): runs grouped into arms, aggregated over seeds.

`runs` reads each run directory into one curve per run (best P against candidates, tokens, cost and
wall time); `arms` groups runs into arms by their settings (or a label), aggregates the curves with
confidence bands and tests whether the arms differ; `page` writes the comparison as JSON and as an
HTML page with matplotlib plots; `seeds` runs a set of campaign files over several seeds.
May import the archive, config and review rooms; nothing imports it but the command line.
"""
