# Builds a folder 1500 levels deep in its own folder (marked @MARKER@ at the bottom): does the grader's clean-up remove it, or stop (a recursion) and leave it on the machine, or fail the grading? Computes right: the score must not change.
import os

@SOLUTION@


def _deep():
    here = os.getcwd()
    try:
        for name in ("a", "b"):
            os.mkdir(name)
            os.chdir(name)
            for _ in range(1500):
                os.mkdir("d")
                os.chdir("d")
            open("@MARKER@", "w").close()
            os.chdir(here)
    except OSError as exc:
        print("stopped:", exc)
    finally:
        os.chdir(here)


_deep()
