"""Bench: trusted strategies (Kernel Tuner's, exported modules, llm_guided) run on tasks;
`tunesmith bench`; train-vs-test generalisation tables.
"""
