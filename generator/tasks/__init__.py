"""Tasks: a tuning task and where it comes from, its fast search space and restrictions,
the problems Tunesmith ships.

One resolver (`entries.load_entry` / `entries.load_task_set`) turns any task entry (hub, problem
spec, live reference, cache file, T1 file) into Task objects. The lowest room: it imports only
`generator.errors` and `generator.config`; a source from a room above (live tasks) registers itself.
"""
