"""Kernel families: what a user's new kernel is, for every estimate of how an optimizer generalises.

A task is one kernel on one GPU (`gemm/H200`); its family is the kernel (`gemm`). The same kernel on
another GPU shares most of its landscape, so cross-validation, the campaign's final choice and the
protocol's tables leave out or weigh whole families, never single spaces of a family that stays in.
Kernels that compute the same thing under other names are one family.
"""

from __future__ import annotations

KERNEL_FAMILIES = {
    "conv2d": "convolution",
    "convolution_milo": "convolution",
    "dedisp": "dedispersion",
    "dedispersion_milo": "dedispersion",
    "batched_gemm": "gemm",
}


def family_of(task: str) -> str:
    """The kernel family of a task name (`convolution_milo/A100` -> `convolution`)."""
    kernel = task.split("/", 1)[0]
    return KERNEL_FAMILIES.get(kernel, kernel)


def families_of(tasks: list[str]) -> dict[str, list[str]]:
    """Family -> its tasks, families in name order."""
    out: dict[str, list[str]] = {}
    for task in sorted(tasks):
        out.setdefault(family_of(task), []).append(task)
    return dict(sorted(out.items()))
