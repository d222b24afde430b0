"""The walls' limits, named when hit; large outputs out of the walls, each judged as it comes.

On the H100 a naive 8192x8192 transpose (a 256 MiB output) was rejected with "unreadable result (BadZipFile)":
the walled child packed the outputs of all six sampled configurations into one frame, and the parent's result
limit (1 GiB) cut it short. The same happens here with a C transpose whose six outputs pass a smaller limit.
"""

import os
import textwrap

import numpy as np
import pytest

from generator.kernels.check import check_template
from generator.kernels.template import load_kernel_spec, parse_template
from generator.kernels.walls import KernelLimits, run_walled

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/g++"), reason="needs g++")

KERNEL = """\
#include <chrono>
extern "C" float transpose_naive(float *out, const float *in) {
    auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < NY; r++)
        for (int c = 0; c < NX; c++)
            out[(size_t)c * NY + r] = in[(size_t)r * NX + c];
    return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
}
"""


def _transpose_spec(tmp_path, n: int):
    """A naive C transpose of an n x n matrix, brought as `tunesmith template` takes a kernel."""
    (tmp_path / "transpose.cpp").write_text(KERNEL)
    (tmp_path / "reference.py").write_text(
        "import numpy as np\n\ndef transpose(args, params):\n    return {'out': np.ascontiguousarray(args['in'].T)}\n"
    )
    (tmp_path / "problem.toml").write_text(
        textwrap.dedent(f"""\
        name = "transpose_naive_c"
        description = "naive C transpose"
        kernel_file = "transpose.cpp"
        kernel_name = "transpose_naive"
        lang = "C"
        problem_size = [{n}, {n}]
        objective = "time"
        objective_higher_is_better = false
        iterations = 1
        atol = 1e-6
        reference = "reference:transpose"
        compiler_options = ["-O1"]
        seed = 5
        [defines]
        NX = {n}
        NY = {n}
        [[arguments]]
        name = "out"
        dtype = "float32"
        shape = [{n}, {n}]
        fill = "zeros"
        [[arguments]]
        name = "in"
        dtype = "float32"
        shape = [{n}, {n}]
        fill = "random"
        """)
    )
    return load_kernel_spec(tmp_path)


def _template(spec, wrong_at: int | None = None):
    """Seven configurations of `variant` that change nothing; with `wrong_at`, that one skips the last row."""
    source = KERNEL.replace(
        "for (int r = 0; r < NY; r++)",
        "for (int r = 0; r < NY - (variant == WRONG_AT); r++)"
        if wrong_at
        else "for (int r = 0; r < NY; r += 1 + 0 * variant)",
    )
    if wrong_at:
        source = f"#define WRONG_AT {wrong_at}\n" + source
    reply = f'```cpp\n{source}```\n```toml\nhypothesis = "none"\n[tune_params]\nvariant = [1, 2, 3, 4, 5, 6, 7]\n```\n'
    return parse_template(reply, spec)


def test_six_large_outputs_past_the_result_limit_are_judged_one_at_a_time(tmp_path):
    spec = _transpose_spec(tmp_path, 1024)  # 4 MiB an output, 24 MiB for the six sampled configurations
    check = check_template(spec, _template(spec), sample=6, limits=KernelLimits(timeout_s=120, result_mb=16))
    assert check.ok, check.feedback
    assert len(check.checked) == 6


def test_a_wrong_configuration_among_large_outputs_is_named(tmp_path):
    spec = _transpose_spec(tmp_path, 1024)
    check = check_template(
        spec, _template(spec, wrong_at=7), sample=6, limits=KernelLimits(timeout_s=120, result_mb=16)
    )
    assert not check.ok
    assert check.feedback.startswith(
        "Configuration variant=7 is wrong: output out differs from the reference at 1024 of"
    )


def test_outputs_kept_past_the_result_limit_name_the_limit(tmp_path):
    spec = _transpose_spec(tmp_path, 1024)
    template = _template(spec)
    configs = template.configs[:6]
    result = run_walled(
        template.source,
        "transpose_naive",
        [1024, 1024],
        spec.arguments(),
        [0],
        template.tune_params,
        configs,
        spec.problem.defines,
        ["-O1"],
        1,
        KernelLimits(timeout_s=120, result_mb=16),
    )
    assert result.error is not None and "result limit of 16 MiB (KernelLimits.result_mb)" in result.error
    assert "BadZipFile" not in result.error


def test_a_forged_output_frame_larger_than_its_output_is_refused_and_named(tmp_path):
    spec = _transpose_spec(tmp_path, 64)
    # the kernel writes a frame of its own into every pipe it may write to, claiming a 1 TiB output
    forger = textwrap.dedent("""\
        #include <fcntl.h>
        #include <stdint.h>
        #include <string.h>
        #include <sys/stat.h>
        #include <unistd.h>
        extern "C" float transpose_naive(float *out, const float *in) {
            const char head[] = "{\\"config\\": \\"1\\", \\"arg\\": 0}";
            int64_t n = sizeof head - 1, huge = (int64_t)1 << 40;
            for (int fd = 3; fd < 256; fd++) {
                struct stat st;
                int fl = fcntl(fd, F_GETFL);
                if (fl < 0 || (fl & O_ACCMODE) != O_WRONLY || fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
                if (write(fd, &n, 8) < 0 || write(fd, head, n) < 0 || write(fd, &huge, 8) < 0) continue;
            }
            return 1.0f;
        }
        """)
    result = run_walled(
        forger,
        "transpose_naive",
        [64, 64],
        spec.arguments(),
        [0],
        {"variant": [1]},
        [(1,)],
        spec.problem.defines,
        ["-O1"],
        1,
        KernelLimits(timeout_s=60),
        judge=lambda arg, got: None,
    )
    assert result.error is not None
    assert result.error.startswith(
        "the walled kernel run sent back an output (configuration 1, argument 0) of "
        "1,099,511,627,776 bytes, over the walls' limit of "
    )
    assert result.error.endswith("bytes for it (the size of that argument)")


@pytest.mark.slow
def test_the_h100s_transpose_size_is_checked_with_the_default_limits(tmp_path):
    """8192x8192 (256 MiB an output), six configurations, the default limits: the size that failed on the H100."""
    spec = _transpose_spec(tmp_path, 8192)
    check = check_template(spec, _template(spec), sample=6)
    assert check.ok, check.feedback
    assert np.prod(spec.problem.problem_size) * 4 * 6 > KernelLimits().result_mb << 20


def test_a_kernel_past_the_cpu_time_limit_is_told_which_limit(tmp_path):
    spin = 'extern "C" float spin(float *C) { volatile double x = 0; for (;;) x += 1; C[0] = x; return 1.0f; }'
    result = run_walled(
        spin,
        "spin",
        [8],
        [np.zeros(8, np.float32)],
        [0],
        {"v": [0]},
        [(0,)],
        {},
        ["-O1"],
        1,
        KernelLimits(timeout_s=60, cpu_s=3),
    )
    assert result.error.startswith("the walled kernel run ended without a result (it crashed or was killed: killed ")
    assert "at the walls' CPU-time limit of 3 s (KernelLimits.cpu_s)" in result.error


def test_a_crashing_kernel_is_told_it_crashed_and_why_it_may_have():
    crash = 'extern "C" float crash(float *C) { volatile float *p = 0; *p = 1; return 1.0f; }'
    result = run_walled(
        crash,
        "crash",
        [8],
        [np.zeros(8, np.float32)],
        [0],
        {"v": [0]},
        [(0,)],
        {},
        ["-O1"],
        1,
        KernelLimits(timeout_s=60),
    )
    assert (
        "crashed (SIGSEGV): a bad memory access in the kernel, or an allocation refused by the walls' memory "
        "limit (RLIMIT_AS 2048 MiB, KernelLimits.memory_mb)" in result.error
    )
