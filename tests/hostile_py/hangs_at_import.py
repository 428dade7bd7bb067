# Never finishes loading: sleeps, then spins, at import (the grader must give up at the time limit, not wait for ever).
import time

time.sleep(3)
while True:
    pass

@SOLUTION@
