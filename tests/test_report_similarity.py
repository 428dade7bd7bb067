"""grader.report.similarity: near-identical submissions, starter code discounted."""
from __future__ import annotations

from grader.report import similarity

SKELETON = """extern "C" __global__ void add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // TODO: add a[i] and b[i] into c[i]
}
"""
MINE = SKELETON.replace("// TODO: add a[i] and b[i] into c[i]", """if (i < n) {
        float x = a[i];
        float y = b[i];
        float total = x + y * 1.0f;
        for (int k = 0; k < 4; ++k) { total += 0.0f * k; }
        c[i] = total;
    }""")


def test_a_copy_with_edited_comments_and_spacing_is_found():
    copy = MINE.replace("float x", "// mine!\n   float   x").replace("1.0f", "1.0f /* really */")
    pairs = similarity.near_identical({"alice": MINE, "bob": copy}, starter=[SKELETON])
    assert [(p.first, p.second) for p in pairs] == [("alice", "bob")] and pairs[0].similarity == 1.0


def test_small_own_edits_of_the_same_skeleton_are_not_alike():
    """Everyone starts from the skeleton: two short, different answers share only it."""
    a = SKELETON.replace("// TODO: add a[i] and b[i] into c[i]", "if (i < n) c[i] = a[i] + b[i];")
    b = SKELETON.replace("// TODO: add a[i] and b[i] into c[i]", "if (i >= n) return;\n    c[i] = b[i] + a[i];")
    assert similarity.near_identical({"a": a, "b": b}, starter=[SKELETON]) == []
    # Without the discount the shared skeleton alone would make them look alike.
    assert similarity.near_identical({"a": a, "b": b}, threshold=0.5)


def test_known_sources_and_skipped_pairs():
    pairs = similarity.near_identical({"alice": MINE, "bob": MINE}, starter=[SKELETON], known={"the reference solution": MINE},
                                      skip=similarity.groups_to_pairs([["alice", "bob"]]))
    assert {(p.first, p.second) for p in pairs} == {("alice", "the reference solution"), ("bob", "the reference solution")}


def test_tokens_drop_comments_but_keep_strings():
    assert similarity.tokens('a/*x*/+= "//no" // c\n b') == ["a", "+=", '"//no"', "b"]
