# expect: ok|exception
# cheat: yes
# Imports Tunesmith's own task loader to read the answer key and jump to the optimum.
import numpy as np


class ImportProjectCache:
    def __call__(self, func, searchspace):
        from generator.tasks.entries import load_tasks

        for root in ("@@HUB@@", "@@PROJECT@@/../shared/data/benchmark_hub"):
            try:
                tasks = load_tasks(root)
            except Exception:
                continue
            for task in tasks:
                if list(task.space.tune_params) == list(searchspace.tune_params) and len(task.space.valid) == len(searchspace.valid):
                    func(task.space.config_of(int(np.nanargmin(task.key.values))))
                    return
