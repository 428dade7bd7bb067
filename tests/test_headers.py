"""The everyday headers compile as nvcc users expect, from the grader's own folders only."""
from pathlib import Path

import pytest

from grader import headers
from grader.compile import compile_source, foreign_files
from grader.spec import Limits
from grader.submission import Submission, check_policy

pytest.importorskip("cupy_backends.cuda.libs.nvrtc")

KERNEL = r'''
extern "C" __global__ void k(float* out, int n)
{
    uint32_t lane = threadIdx.x % 32u;
    std::int64_t wide = INT_MAX;
    if (n < 0) printf("never %d %u\n", n, lane);
    assert(n >= 0);
    out[0] = sqrtf(2.0f) + FLT_MAX * 0.0f + (INFINITY > 1.0f) + (float)wide * 0.0f + (float)M_PI * 0.0f
             + __half2float(__float2half(1.5f)) + __bfloat162float(__float2bfloat16(0.5f));
}
'''


def test_every_everyday_header_compiles_together():
    includes = "".join(f"#include <{h}>\n" for h in headers.EVERYDAY)
    result = compile_source(includes + KERNEL, "mine.cu")
    assert result.ok, result.log
    assert ".entry k" in result.ptx


@pytest.mark.parametrize("header", headers.EVERYDAY)
def test_each_everyday_header_compiles_alone(header):
    result = compile_source(f'#include <{header}>\n#include "{header}"\n'
                            'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n', "mine.cu")
    assert result.ok, result.log


def test_an_unknown_header_does_not_compile_and_says_why():
    result = compile_source('#include <vector>\nextern "C" __global__ void k(float* x) { x[0] = 1.0f; }\n', "mine.cu")
    assert not result.ok
    assert "not available" in result.hint


def test_the_policy_allows_the_everyday_list_by_default_and_nothing_else(tmp_path):
    def verdict(text: str, limits: Limits = Limits()):
        return check_policy(Submission(tmp_path / "s.cu", "s.cu", text, "0", len(text)), limits)

    assert verdict("#include <cstdio>\n#include \"cuda_runtime.h\"\n").ok
    for bad in ('#include "/etc/passwd"\n', "#include <vector>\n", '#include "../grader/include/cstdio"\n',
                "#include <include/cstdio>\n"):
        refused = verdict(bad)
        assert not refused.ok and refused.line == 1, bad
        assert "<cstdio>" in refused.message  # the message lists what may be included
    assert not verdict("#include <cstdio>\n", Limits(allowed_includes=())).ok  # an exercise may narrow it


def test_ptx_naming_a_file_outside_the_grader_folders_is_foreign(tmp_path):
    ptx = '.file 1 "mine.cu"\n.file 2 "/etc/passwd"\n' + f'.file 3 "{headers.own_dir() / "cmath"}"\n'
    assert foreign_files(ptx, "mine.cu", headers.include_dirs(None)) == ["/etc/passwd"]
    sneaky = f'.file 2 "{headers.own_dir()}/../../etc/passwd"\n'
    assert foreign_files(sneaky, "mine.cu", headers.include_dirs(None))


def test_the_headers_ship_with_the_package():
    for name in ("cstdio", "cuda_runtime.h", "cmath", "cstdint"):
        assert (Path(headers.own_dir()) / name).is_file()


def test_cooperative_groups_compile_from_the_bundled_headers():
    source = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(float* out)
{
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    float v = tile.thread_rank();
    for (int o = 16; o > 0; o /= 2) v += tile.shfl_down(v, o);
    if (tile.thread_rank() == 0) out[threadIdx.x / 32] = v;
}
"""
    result = compile_source(source, "cg.cu")
    assert result.ok, result.log


def test_a_cuda_toolkit_stands_in_where_nvrtc_bundles_no_headers(tmp_path):
    include = tmp_path / "cuda" / "include"
    include.mkdir(parents=True)
    assert headers.toolkit_include({"CUDA_PATH": str(tmp_path / "cuda")}) != include  # no cuda_fp16.h: not a toolkit
    (include / "cuda_fp16.h").write_text("// half\n")
    assert headers.toolkit_include({"CUDA_PATH": str(tmp_path / "cuda")}) == include
    assert include in headers.include_dirs(include) and headers.include_dirs(include)[0] == headers.own_dir()


def test_the_macros_nvcc_gives_without_an_include_compile_bare():
    """nvcc's implicit cuda_runtime.h brings <math.h>'s and <limits.h>'s macros to every file; kernels
    written for nvcc use them with no #include (a softmax's -INFINITY, a min-reduction's INT_MAX)."""
    bare = ('extern "C" __global__ void k(float* y, int* z, int n)\n'
            '{ y[0] = fmaxf(-INFINITY, (float)M_PI); z[0] = n < INT_MAX ? INT_MIN : (int)(UINT_MAX & 1u); }\n')
    result = compile_source(bare, "mine.cu")
    assert result.ok, result.log
    assert "--pre-include=nvcc_implicit.h" in result.options
    # The same with another header included: the macros come once, with no redefinition warning.
    result = compile_source("#include <cstdio>\n#include <climits>\n" + bare, "mine.cu")
    assert result.ok and "warning" not in result.log, result.log


def test_only_a_source_naming_those_macros_gets_the_pre_include():
    plain = compile_source('extern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n', "mine.cu")
    assert plain.ok and "--pre-include=nvcc_implicit.h" not in plain.options
    # FLT_MAX needs <cfloat> under nvcc too: bare, it is an error in both.
    refused = compile_source('extern "C" __global__ void k(float* y) { y[0] = FLT_MAX; }\n', "mine.cu")
    assert not refused.ok and "FLT_MAX" in refused.log
