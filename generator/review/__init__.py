"""Review: lineage queries over a run directory, terminal views, the HTML report and its plots.

Reads the archive; imports nothing that runs candidates.
"""
