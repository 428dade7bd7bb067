# Prints megabytes, at import and in every call, but computes right: the score must not change.
import sys

print("x" * (8 * 1024**2))
sys.stderr.write("y" * (8 * 1024**2))

@SOLUTION@

_original = sectors_touched


def sectors_touched(addresses):
    print("z" * (1024**2))
    return _original(addresses)
