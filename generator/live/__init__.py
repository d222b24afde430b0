"""Live: real kernels compiled, verified and timed on a GPU by Kernel Tuner; cache building; all of `live:`.

`entries` parses a `live:` reference, `tasks` makes it a LiveTask (its `SOURCE` is the "live" task source of
`generator.registry`, loaded when a live entry is first resolved), `evaluate` scores a candidate on one,
`kernel` talks to the device, `cache_build` measures a whole space. Imports `tasks`, `scoring`, `sandbox` and
`evaluation`; nothing below imports it: the evaluation asks a live task through the `MeasuredTask` interface
(`generator.tasks.sources`).
"""
