"""Small budgets and rugged spaces: the synthesizer's new components vs its old ones, the shipped winner
and Kernel Tuner's strategies, at the methodology's budget, P ± standard error.

    python -m benchmarks.bench_small_spaces [--repeats 30] [--seed 0] [--workers 2] \
        [--json benchmarks/results/small_spaces.json] [--space ENTRY ...] [--kernel-tuner a,b]

Spaces: the problems with a few dozen evaluations or fewer (reduction, transpose, nbody, conv2d) and
the rugged convolution spaces (convolution_milo MI250X: fdc -0.36, 42 evaluations; A4000: fdc -0.02).
The synthesizer's compositions are fixed here (written by `render`, defaults from a Profile of a
small, rugged space), so the table isolates what each component adds: `synth_before` is the design
the synthesizer favoured for small budgets before (spread init, knn screening, no switching);
`synth_small` adds all three new parts (budget-sized design, confidence-bound screening, adaptive
switching); the others add one part each.
"""

import sys

from benchmarks._lib.small_spaces import main

if __name__ == "__main__":
    sys.exit(main())
