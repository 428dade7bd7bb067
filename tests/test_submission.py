import pytest

from grader.spec import Limits
from grader.submission import check_policy, read


def _policy(tmp_path, text, limits=Limits()):
    path = tmp_path / "sub.cu"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    sub, verdict = read(path)
    return verdict if not verdict.ok else check_policy(sub, limits)


@pytest.mark.parametrize("source", [
    '#include "/etc/passwd"\n',
    "  #  include <vector>\n",
    "#include <cstdio>/**/x\n",
    '#include "../../reference/level2/solution.cu"\n',
    "#inc\\\nlude <x>\n",
    "#define F </etc/passwd>\n#include F\n",
    "#include_next <x>\n",
    "#if __has_include(<x>)\n#endif\n",
])
def test_includes_are_refused_with_the_line(tmp_path, source):
    verdict = _policy(tmp_path, "// hi\n" + source)
    assert not verdict.ok
    assert "sub.cu:" in verdict.message


def test_allowed_include_passes(tmp_path):
    assert _policy(tmp_path, "#include <cuda_fp16.h>\n", Limits(allowed_includes=("cuda_fp16.h",))).ok


@pytest.mark.parametrize("data, words", [
    (b"", "empty"), (b"  \n\n", "empty"), (b"\x00\x01binary", "not a text file"), (b"\xff\xfe\xfa bad", "UTF-8"),
])
def test_unreadable_sources_get_a_clear_refusal(tmp_path, data, words):
    verdict = _policy(tmp_path, data)
    assert not verdict.ok and words in verdict.message


def test_oversized_source_is_refused(tmp_path):
    verdict = _policy(tmp_path, "x" * 5000, Limits(max_source_bytes=4096))
    assert not verdict.ok and "limit" in verdict.message
