"""Winners of earlier Tunesmith campaigns, kept for comparison and provenance (each with its report in reports/).

They are not what Tunesmith recommends: `generated_algorithms.recommended` is, chosen by the generalisation
protocol (docs/explanation/generalisation.md), whose table scores every module here beside it
(benchmarks/results/protocol/). Each module still works as a Kernel Tuner strategy:

    import generated_algorithms.archive.knn_vns_annealing as strategy
    kernel_tuner.tune_kernel(..., strategy=strategy)
"""

import pkgutil


def available() -> list[str]:
    """Names of the archived optimizer modules."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
