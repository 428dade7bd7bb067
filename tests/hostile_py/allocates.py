# Allocates without bound.
@SOLUTION@


def bank_conflict_degree(tile_width, access):
    hoard = []
    while True:
        hoard.append(bytearray(64 * 1024**2))
