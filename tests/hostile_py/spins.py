# Never returns.
@SOLUTION@


def sectors_touched(addresses):
    while True:
        pass
