import sys
import time

from grader.run.parent.sandbox import run_child


def test_a_hanging_child_is_killed_at_the_deadline():
    start = time.monotonic()
    run = run_child([sys.executable, "-c", "import time; time.sleep(60)"], timeout=1.0)
    assert run.timed_out and time.monotonic() - start < 10
    assert "time limit" in run.describe()


def test_output_is_capped_and_counted():
    run = run_child([sys.executable, "-c", "import sys; sys.stdout.write('x' * 500000)"], timeout=30, output_cap=1000)
    assert run.stdout_bytes == 500000
    assert len(run.stdout) < 1200 and "more bytes" in run.stdout


def test_a_crash_is_a_value():
    run = run_child([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], timeout=30)
    assert run.signal_name == "SIGSEGV" and not run.timed_out


def test_kill_tagged_spares_what_started_after_the_moment_it_is_given():
    """The reaper kills only what its grader started before it ended: a new batch on the same folder
    reuses the old one's tags, and its children must live."""
    import os
    import subprocess

    from grader.run.parent.tags import TAG_VARIABLE, kill_tagged, uptime

    tag = f"test-started-by-{os.getpid()}"
    before = uptime()
    time.sleep(0.05)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, TAG_VARIABLE: tag})
    try:
        time.sleep(0.2)
        assert kill_tagged(tag, started_by=before) == 0 and child.poll() is None
        assert kill_tagged(tag, started_by=uptime()) == 1
        assert child.wait(timeout=10) == -9
    finally:
        child.kill()
