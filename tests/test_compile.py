from grader.kinds.cuda_compile import compile_problem
from grader.compile import compile_source, entry_names, kernel_param_types
from grader.exercise import load


def test_compile_gives_ptx_and_cubin_with_line_info():
    result = compile_source('extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 1.f; }', "mine.cu")
    assert result.ok, result.log
    assert ".loc" in result.ptx and result.cubin[:4] == b"\x7fELF"
    assert kernel_param_types(result.ptx, "k") == ["u64", "u32"]
    assert entry_names(result.ptx) == ["k"]


def test_host_main_gets_a_hint():
    result = compile_source("int main() { return 0; }", "mine.cu")
    assert not result.ok and "mine.cu(1)" in result.log and "main()" in result.hint


def test_a_compiler_out_of_memory_is_named_a_compile_time_bomb():
    from grader.compile import _hint

    log = 'bomb.cu(5): catastrophic error: out of memory\n1 catastrophic error detected in the compilation of "bomb.cu".'
    assert "compile-time bomb" in _hint(log)
    assert "compile-time bomb" not in _hint("bomb.cu(5): error: identifier \"x\" is undefined")


def test_signature_problems_are_named(level2):
    spec = load(level2).spec
    cases = {
        '__global__ void matmul_tiled(const float* A, const float* B, float* C, int N) {}': 'extern "C"',
        'extern "C" __global__ void matmul(const float* A, const float* B, float* C, int N) {}': "No kernel named",
        'extern "C" __global__ void matmul_tiled(const float* A, float* C, int N) {}': "takes 3 parameter",
        'extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, float N) {}': "wrong type",
    }
    for source, words in cases.items():
        result = compile_source(source, "s.cu")
        assert result.ok, result.log
        problem = compile_problem(spec, "s.cu", {"ok": True, "ptx": _tmp_ptx(result.ptx)})
        assert problem and words in problem, (source, problem)


def _tmp_ptx(text):
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False)
    f.write(text)
    f.close()
    return f.name
