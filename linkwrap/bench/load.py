"""LOAD: how busy the rest of the machine was while a measurement ran, and whether that was too busy.

The figure is the CPU the rest of the machine used during the rounds, in CPUs on average: the busy
time of every CPU in /proc/stat (user, nice, system, irq, softirq, steal) over the measurement, minus
the measurer's own CPU and its linkers' (getrusage of itself and its waited-for children), divided by
the wall time. Not the 1-minute load average: that counts the measurer's own linkers (wild runs a
thread per core, so a measurement alone reads as a busy machine), it counts runnable tasks rather than
CPU used, and it trails a change by a minute, so one read at the start or end says little about the
rounds in between.

A measurement is "taken busy" when that figure reached the background load limit, the one
may_start() starts the background measurer under: background_load x the usable CPUs. A linker
whose threads gain nothing on busy cores (wild) then ranks below one that needs no spare core,
and the choice would keep that ranking: a busy result still counts (an honest number beats none),
but the background measurer takes it again when the machine is idle (background.needs_measuring).
"""
import os


def sample() -> tuple:
    """(busy CPU seconds of the whole machine, this process's and its children's CPU seconds, monotonic s)."""
    import resource
    import time
    own = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                resource.getrusage(resource.RUSAGE_CHILDREN)))
    return machine_busy_s(), own, time.monotonic()


def machine_busy_s() -> float | None:
    """Seconds every CPU together spent busy since boot (/proc/stat's cpu line), or None unreadable."""
    try:
        with open("/proc/stat", "rb") as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != b"cpu" or len(first) < 9:
        return None
    # user nice system idle iowait irq softirq steal (guest is counted in user already)
    ticks = [int(x) for x in first[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def others(start, end) -> tuple:
    """(CPU seconds the rest of the machine used, wall seconds) between two sample()s."""
    if start[0] is None or end[0] is None:
        return None, end[2] - start[2]
    # Never below zero: /proc/stat counts in clock ticks, getrusage finer.
    return max(0.0, (end[0] - start[0]) - (end[1] - start[1])), end[2] - start[2]


def others_cpus(cpu_s, wall_s) -> float | None:
    """The CPUs the rest of the machine kept busy on average, from others()' sums."""
    if cpu_s is None or not wall_s or wall_s <= 0:
        return None
    return cpu_s / wall_s


def limit_cpus(fraction, cpus) -> float:
    """The background load limit: what may_start() starts under (background_load x usable CPUs)."""
    return fraction * cpus


def is_busy(cpus_used, limit) -> bool:
    """Taken busy: the rest of the machine used at least the limit's CPUs during the rounds."""
    return cpus_used is not None and cpus_used >= limit


def summary(cpu_s, wall_s, fraction, cpus) -> dict:
    """What a measurement records of its machine's load (JSON keys and the state's, units in the names)."""
    used = others_cpus(cpu_s, wall_s)
    limit = limit_cpus(fraction, cpus)
    return {"others_cpus": None if used is None else round(used, 3), "limit_cpus": limit,
            "usable_cpus": cpus, "busy": is_busy(used, limit)}


def settings_limit(request, environ) -> tuple:
    """(background_load, usable CPUs) as [bench] sets them for this link (the defaults on a bad file)."""
    from linkwrap.errors import LinkwrapError
    from linkwrap.request import config
    try:
        fraction = config.load(request, environ).background["background_load"]
    except LinkwrapError:
        fraction = config.BACKGROUND_DEFAULTS["background_load"]
    return fraction, len(os.sched_getaffinity(0))


def text(load) -> str:
    """For a table's title: 'others used 1.62 of 2 CPUs: taken busy (limit 1.00), measured again when idle'."""
    if not load or load.get("others_cpus") is None:
        return "others' CPU unknown"
    said = f"others used {load['others_cpus']:.2f} of {load['usable_cpus']} CPUs"
    if load.get("busy"):
        return f"{said}: taken busy (limit {load['limit_cpus']:.2f}), measured again when idle"
    return said
