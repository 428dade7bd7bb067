# At import, with the audit hook switched off: fills its own folder (a file past the size limit, then more files; bounded, so as not to fill the machine that runs the tests), /tmp and /dev/shm, then computes right: the score must not change.
@UNHOOK@
import os

@SOLUTION@

CHUNK = b"\0" * (16 * 1024**2)


def _fill(path, limit):
    written = 0
    try:
        with open(path, "wb") as f:
            while written < limit:
                f.write(CHUNK)
                written += len(CHUNK)
    except OSError as exc:
        print(f"{path}: stopped after {written >> 20} MiB: {exc.strerror}")
    return written


def _fill_everything():
    total = _fill("huge.bin", 96 * 1024**2)  # past RLIMIT_FSIZE (the harness lowers it to 64 MiB): EFBIG, or SIGXFSZ
    os.remove("huge.bin")
    for i in range(2):
        total += _fill(f"more-{i}.bin", 48 * 1024**2)
    for path in ("/tmp/kernel-grader-hostile-fill", "/dev/shm/kernel-grader-hostile-fill"):
        _fill(path, 48 * 1024**2)
        try:
            os.remove(path)
        except OSError:
            pass
    print(f"wrote {total >> 20} MiB into its folder")


_fill_everything()
