"""What the benchmarks share: warm timing in this process."""
import statistics
import time


def median_us(fn, runs, warmup=20):
    """(median, p90) of fn()'s wall time in microseconds, after warmup calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t)
    samples.sort()
    return statistics.median(samples) / 1000, samples[int(len(samples) * 0.9)] / 1000
