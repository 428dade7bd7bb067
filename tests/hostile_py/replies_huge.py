# A reply of 100 MB (the grader reads at most 16 MiB of one), a value nested 100000 deep, and one that refers to itself.
@SOLUTION@


def matmul_naive(mem):
    return "x" * 100_000_000


def chain_time(n, k, fused, bandwidth=2.0e12, overhead=5.0e-6):
    value = 0.0
    for _ in range(100_000):
        value = [value]
    return value


def crossover_n(overhead=5.0e-6, bandwidth=2.0e12, bytes_per_element=8):
    loop = []
    loop.append(loop)
    return loop
