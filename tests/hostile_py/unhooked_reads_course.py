# With the audit hook switched off: the reference solution, its wrong files and the hidden tests by absolute path (@ROOT@), by walking up from its folder, and through /proc/self/root and /proc/self/cwd; returned and printed.
@UNHOOK@
import glob
import os

@SOLUTION@

PATHS = ["@ROOT@/reference/lesson_numpy/solution.py", "@ROOT@/exercises/lesson_numpy/tests/test_sectors_touched.py",
         "/proc/self/root@ROOT@/reference/lesson_numpy/solution.py", "/proc/self/cwd/../../../../../../../@ROOT@/reference/lesson_numpy/solution.py",
         "../../../../../../../../@ROOT@/reference/lesson_numpy/solution.py"]


def sectors_touched(addresses):
    for path in PATHS:
        try:
            text = open(path).read()
        except OSError as exc:
            print(path, exc)
            continue
        print(text)
        return text, 0.0
    raise FileNotFoundError("the reference is nowhere to be read")


def matmul_naive(mem):
    found = glob.glob("@ROOT@/**/*.py", recursive=True) + glob.glob("/tmp/**/test_*.py", recursive=True)
    texts = [open(p).read() for p in found]
    print(*texts)
    return texts or None


def matmul_tiled(mem, T):
    tree = []
    for folder, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "usr")]
        tree += [os.path.join(folder, f) for f in files if f in ("solution.py", "test_matmul_tiled.py")]
        if len(tree) > 5:
            break
    return [open(p).read() for p in tree] or None


def transpose_tiled(A, T):
    names = os.listdir("@ROOT@/reference/lesson_numpy/wrong")
    return [open(f"@ROOT@/reference/lesson_numpy/wrong/{n}").read() for n in names], 0, 0
