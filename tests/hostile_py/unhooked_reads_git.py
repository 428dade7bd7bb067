# With the audit hook switched off: the checkout's .git (@CHECKOUT@): `git show HEAD:reference/...` through execv, and its refs, index and objects read and inflated directly, looking for the reference's text.
@UNHOOK@
import os
import zlib

@SOLUTION@

GIT = "@CHECKOUT@/.git"


def matmul_naive(mem):
    # The worker becomes git: what git prints lands in the output the student sees.
    os.execv("/usr/bin/git", ["git", "-C", "@CHECKOUT@", "--no-pager", "show", "HEAD:reference/lesson_numpy/solution.py"])


def bank_conflict_degree(tile_width, access):
    head = open(f"{GIT}/HEAD").read()
    index = open(f"{GIT}/index", "rb").read()
    return head + str(index.count(b"reference/lesson_numpy"))


def sectors_touched(addresses):
    found = []
    for folder, _, files in os.walk(f"{GIT}/objects"):
        for name in files:
            data = open(os.path.join(folder, name), "rb").read()
            try:
                text = zlib.decompress(data).decode(errors="replace")
            except zlib.error:
                continue
            if "def sectors_touched" in text and "wanted" in text:
                found.append(text)
    print(*found)
    return found or None


def transpose_tiled(A, T):
    packs = [p for p in os.listdir(f"{GIT}/objects/pack") if p.endswith(".pack")]
    data = open(f"{GIT}/objects/pack/{packs[0]}", "rb").read(1 << 20)
    return data.decode(errors="replace"), 0, 0
