#!/usr/bin/env python3
"""Who held the CPU while a process's threads waited for one (BENCHMARKS.md, session 29).

Reads the output of `perf sched timehist` (from `perf sched record -a ...`, run as root) and, for every wait of a
thread of PID of at least MIN_MS milliseconds between becoming runnable and running (the "sch delay" column), sums
what ran on that CPU meanwhile. Prints the count of such waits by the task that ran longest in each, and with -v each
wait. "<idle>" means the guest's CPU was idle all the while: in a virtual machine, its virtual CPU was not running.

    perf sched record -o sched.data -a -- sleep 30      # while the benchmark runs
    perf sched timehist -i sched.data > sched.txt
    scripts/sched-waits.py sched.txt <pid> 4 [-v]
"""
import bisect
import collections
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, pid, minimum = sys.argv[1], sys.argv[2], float(sys.argv[3])
    verbose = "-v" in sys.argv[4:]
    rows = []
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) < 6:
                continue
            try:
                time, wait, delay, run = float(parts[0]), *map(float, parts[-3:])
            except ValueError:
                continue  # the header
            rows.append((time, parts[1], " ".join(parts[2:-3]), wait, delay, run))
    by_cpu = collections.defaultdict(list)
    for row in rows:
        by_cpu[row[1]].append(row)
    times = {cpu: [row[0] for row in events] for cpu, events in by_cpu.items()}
    culprits = collections.Counter()
    waits = 0
    for time, cpu, task, _, delay, run in rows:
        if delay < minimum or f"/{pid}]" not in task and f"[{pid}]" not in task:
            continue
        # Columns are in ms; the row's time is when the task was switched out after running `run` ms, having
        # waited `delay` ms before that.
        ran_at = time - run / 1000
        since = ran_at - delay / 1000
        held = collections.Counter()
        events = by_cpu[cpu]
        index = bisect.bisect_left(times[cpu], since)
        while index < len(events) and events[index][0] <= ran_at + 1e-6:
            other = events[index]
            held[other[2].split("/")[0].rstrip("]") + "]"] += min(other[5], (other[0] - since) * 1000)
            index += 1
        top = held.most_common(3)
        waits += 1
        culprits[top[0][0] if top else "?"] += 1
        if verbose:
            print(f"{time:.3f} {cpu} {task} waited {delay:.1f} ms; on {cpu} meanwhile: "
                  + ", ".join(f"{name} {ms:.1f} ms" for name, ms in top))
    print(f"{waits} waits of {minimum} ms or more; who held the CPU longest in each:", culprits.most_common(12))


if __name__ == "__main__":
    main()
