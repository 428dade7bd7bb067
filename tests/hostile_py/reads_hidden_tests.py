# Lists and reads the exercise's hidden tests, at import and in a function.
import os

@SOLUTION@

LEAKED = []
try:
    for name in os.listdir("@ROOT@/exercises/lesson_numpy/tests"):
        LEAKED.append(open("@ROOT@/exercises/lesson_numpy/tests/" + name).read())
except Exception as exc:
    print("could not read the tests:", exc)


def bank_conflict_degree(tile_width, access):
    for name in os.listdir("@ROOT@/exercises/lesson_numpy/tests"):
        print(open(os.path.join("@ROOT@/exercises/lesson_numpy/tests", name)).read())
    return 1
