"""Live: real kernels compiled, verified and timed on a GPU by Kernel Tuner; cache building.

Imports `tasks`, `scoring` and `sandbox`. Importing it registers the `live:` task source with the
task resolver (`tasks.entries`), which knows nothing of devices itself; the device code loads only
when a live entry is resolved.
"""

from generator.tasks.entries import Source, register_source


def _load(entry, base):
    from generator.live.tasks import load_live_entry

    return load_live_entry(entry, base)


def _resolve(entry, base):
    from generator.live.tasks import resolve_entry

    return resolve_entry(entry, base, check_device=True)


register_source("live:", Source(load=_load, resolve=_resolve))
