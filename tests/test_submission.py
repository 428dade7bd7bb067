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


def test_a_huge_file_is_refused_without_being_read_whole(tmp_path):
    import tracemalloc

    from grader.submission import read_checked

    path = tmp_path / "huge.cu"
    with open(path, "wb") as f:
        f.truncate(64 * 1024 * 1024)  # sparse: no disk used
    tracemalloc.start()
    try:
        sub, verdict = read_checked(path, Limits())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sub is None and not verdict.ok
    assert "huge.cu is 67,108,864 bytes; the limit is 262,144" in verdict.message
    assert peak < 8 * 1024 * 1024


def test_names_are_shown_on_one_printable_line(tmp_path):
    from grader.submission import display_name, printable

    assert display_name(tmp_path / "a\x1b[2J\nb\u202e.cu") == "a?[2J?b?.cu"
    assert printable("x" * 500) == "x" * 120 and printable("x" * 500, None) == "x" * 500


def test_token_runs_are_where_walking_back_from_each_quote_ends():
    import random

    from grader.submission import _Runs

    def walk_back(text, i):  # what the policy did before, once per quote
        while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_.'"):
            i -= 1
        return i

    rng = random.Random(7)
    alphabet = "a1_.'\" xR8u\n/*(\u00e9\u0663\u00b2-"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
        runs = _Runs(text)
        assert [runs.token_start(i) for i in range(len(text) + 1)] == [walk_back(text, i) for i in range(len(text) + 1)], text


@pytest.mark.parametrize("body", ["__device__ int x = " + "1'" * 8000 + "1;", 'R"(\n' * 60000])
def test_a_source_of_thousands_of_quotes_is_checked_in_moments(body):
    # Checked in the grader's own process, before any time limit: 8,000 digit separators on one
    # line took a minute when each quote walked back to the start of the number, and 60,000
    # unclosed raw strings were each looked for to the end of the file.
    import time

    from grader.submission import Submission

    source = f"{body}\n#include <vector>\n"
    sub = Submission(path=None, name="s.cu", source=source, sha256="", size=len(source))
    started = time.perf_counter()
    verdict = check_policy(sub, Limits())
    assert time.perf_counter() - started < 5
    assert not verdict.ok and "'#include <vector>' is not allowed" in verdict.message
