#!/usr/bin/env python3
"""Instruction counts of OnlineBenchmarks' (or OfflineBenchmarks') key rows under callgrind, side by side with their floors.

Usage: bench-instructions.py BINARY [ITERATIONS] [OUTPUT_DIRECTORY]
       bench-instructions.py --offline OFFLINE_KEY_INSTRUCTIONS KEPT_STORE_DIRECTORY [ITERATIONS] [OUTPUT_DIRECTORY]

The benchmark (ONLINE_BENCH_INSTRUCTIONS=ITERATIONS) zeroes callgrind's counts before each row's calls and dumps
them after, named `size|row|iterations`; this script runs it under callgrind, reads every dump and prints the
instructions per call (all threads: the caller's, curl's event thread's) and the ratios. The dumps stay in
OUTPUT_DIRECTORY (default .build/bench-instructions) for `callgrind_annotate --inclusive=yes`.

The binary is run from a copy without its DWARF sections (valgrind 3.19 cannot read the DWARF 5 that Swift 6.3
writes); the symbol table stays, so the dumps still name every function.

With --offline, the binary is OfflineKeyInstructions and KEPT_STORE_DIRECTORY a store an OfflineBenchmarks run kept
(OFFLINE_BENCH_KEEP, same OFFLINE_BENCH_N): it opens the store and looks keys up ITERATIONS times through read(_:),
await execute(_:) and the typed DataService, each dumped as `N = count|row|iterations`; the floor of the two others
is read(_:).
"""
import glob
import os
import re
import shutil
import subprocess
import sys


def calls_into(path, pattern):
    """The calls to the functions whose (mangled) name matches the regular expression `pattern` in a dump: (count,
    inclusive instructions), over all callers."""
    names, callee, count, cost, expect = {}, None, 0, 0, False
    with open(path, encoding="utf-8", errors="replace") as dump:
        for line in dump:
            if line.startswith(("fn=", "cfn=")):
                body = line.split("=", 1)[1].strip()
                ident, _, name = body.partition(" ")
                if name:
                    names[ident] = name
                if line.startswith("cfn="):
                    callee = names.get(ident, "")
                continue
            if line.startswith("calls="):
                expect = callee is not None and re.search(pattern, callee) is not None
                if expect:
                    count += int(line[6:].split()[0])
                continue
            if expect and line[:1].isdigit() or expect and line[:1] in "+-*":
                cost += int(line.split()[1])
                expect = False
    return count, cost


def run_under_callgrind(binary, environment, out):
    """Runs a copy of BINARY without its DWARF sections under callgrind, the dumps in OUT."""
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    copy = os.path.join(out, os.path.basename(binary))
    shutil.copy(binary, copy)
    subprocess.run(["strip", "--strip-debug", copy], check=True)
    return subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=no",
                           "--callgrind-out-file=" + os.path.join(out, "callgrind.out"), copy],
                          env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--offline":
        return offline(sys.argv[2:])
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    out = sys.argv[3] if len(sys.argv) > 3 else ".build/bench-instructions"
    # nginx is started by a run of the benchmark outside valgrind (valgrind 3.19 fails the close_range with which
    # Foundation's Process starts a child); the measured run reads from it.
    server = subprocess.Popen([binary], env=dict(os.environ, ONLINE_BENCH_SERVE="1"), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        root = server.stdout.readline().strip()
        if not root.startswith("http://"):
            sys.exit("nginx did not start for the benchmark")
        environment = dict(os.environ, ONLINE_BENCH_INSTRUCTIONS=str(iterations), ONLINE_BENCH_ROOT=root)
        run = run_under_callgrind(binary, environment, out)
    finally:
        server.stdin.close()
        server.wait()
    rows = read_dumps(run, out)

    def per_call(size, label):
        return rows.get((size, label), (None,))[0]

    floors = {"store, uncached GET": "CurlTransport alone, GET 200",
              "store, uncached GET, telemetry disabled": "CurlTransport alone, GET 200",
              "store, passive read": "TechnicalCache lookup",
              "store, passive read, telemetry disabled": "TechnicalCache lookup",
              "store, passive read through execute(_:), result()": "store, passive read",
              "store, active read (cache + 304), periodic sync": "CurlTransport alone, conditional GET → 304"}
    for readers in (64, 256):
        floors[f"{readers} concurrent active reads (cache + 304)"] = f"{readers} concurrent uncached GETs"
    print(f"OnlineBenchmarks in instructions (callgrind, {iterations} calls per row after 20 warm-up calls; every thread "
          "of the process, none of nginx's)")
    print("")
    print("| size | row | instructions / call | ÷ its floor |")
    print("|---|---|---|---|")
    for (size, label), (value, *_) in rows.items():
        floor = per_call(size, floors[label]) if label in floors else None
        ratio = f"{value / floor:.2f}× ({floors[label]})" if floor else "floor"
        print(f"| {size} | {label} | {value:,.0f} | {ratio} |")
    print("")
    for size in sorted({size for size, _ in rows}):
        bare = per_call(size, "CurlTransport alone, GET 200")
        store = per_call(size, "store, uncached GET")
        quiet = per_call(size, "store, uncached GET, telemetry disabled")
        passive = per_call(size, "store, passive read")
        quiet_passive = per_call(size, "store, passive read, telemetry disabled")
        if bare and store:
            print(f"- {size}: store uncached GET ÷ bare CurlTransport GET = {store / bare:.3f}× (target ≤ 1.10×)")
        if store and quiet:
            print(f"- {size}: default telemetry (no-op backends) ÷ disabled, uncached GET = {(store / quiet - 1) * 100:+.2f} % (target ≤ 2 %)")
        executed = per_call(size, "store, passive read through execute(_:), result()")
        if executed and passive:
            print(f"- {size}: execute + result() ÷ the direct passive read = {executed / passive:.3f}× (target ≤ 2×)")
        if passive and quiet_passive:
            print(f"- {size}: default telemetry ÷ disabled, passive read = {(passive / quiet_passive - 1) * 100:+.2f} % (target ≤ 2 %)")
        active = per_call(size, "store, active read (cache + 304), periodic sync")
        if active and store:
            print(f"- {size}: store active read (cache + 304) ÷ store uncached GET = {active / store:.3f}× (target ≤ 1.15×)")
        for readers in (64, 256):
            concurrent_active = per_call(size, f"{readers} concurrent active reads (cache + 304)")
            concurrent_uncached = per_call(size, f"{readers} concurrent uncached GETs")
            if concurrent_active and concurrent_uncached:
                print(f"- {size}: {readers} concurrent: active read ÷ uncached GET = {concurrent_active / concurrent_uncached:.3f}× "
                      "instructions per read (the inverse of the throughput ratio when both are CPU-bound)")
    # A 304's refresh is written by a background transaction within 100 ms, so how many of them fall into a row's
    # calls depends on the wall-clock time the calls take under valgrind: the active rows are shown without them
    # (per read) and the background writes apart (per entry written), both independent of the machine's load.
    background = []
    for (size, label), (value, path, reads) in rows.items():
        if "active" not in label:
            continue
        flushes, flush_cost = calls_into(path, r"flushRefreshes\d.*LMDBTransactionCtKF$")
        seals, _ = calls_into(path, r"CryptoV4seal_3key.*KF$")
        without = value - flush_cost / reads
        background.append((size, label, without, flushes, seals, flush_cost / seals if seals else 0))
    if background:
        print("")
        print("| size | row | instructions / read without the background writes | background writes in the row | entries written | instructions / entry written |")
        print("|---|---|---|---|---|---|")
        for size, label, without, flushes, seals, per_entry in background:
            print(f"| {size} | {label} | {without:,.0f} | {flushes} | {seals} | {per_entry:,.0f} |")
        for size, label, without, _, _, _ in background:
            floor = {"store, active read (cache + 304), periodic sync": "store, uncached GET"}.get(label) or floors.get(label)
            base = per_call(size, floor) if floor else None
            if base:
                print(f"- {size}: {label} without the background writes ÷ {floor} = {without / base:.3f}×")
    print("")
    print(f"Dumps: {out}/callgrind.out.* (callgrind_annotate --inclusive=yes FILE | swift demangle --simplified)")


def read_dumps(run, out):
    """Instructions per call, the dump and the calls counted of every dump named `size|row|iterations`, by (size, row)."""
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-2000:] + run.stderr[-4000:])
        sys.exit(f"the benchmark failed under callgrind (exit {run.returncode})")
    rows = {}
    dumps = glob.glob(os.path.join(out, "callgrind.out.*"))
    for path in sorted(dumps, key=lambda path: int(path.rsplit(".", 1)[1]) if path.rsplit(".", 1)[1].isdigit() else 0):
        name, total = None, None
        with open(path, encoding="utf-8", errors="replace") as dump:
            for line in dump:
                if line.startswith("desc: Trigger: Client Request: "):
                    name = line.split("Client Request: ", 1)[1].strip()
                elif line.startswith("totals:") or (total is None and line.startswith("summary:")):
                    total = int(line.split()[1])
        if name and total is not None and name.count("|") == 2:
            size, label, count = name.split("|")
            rows[(size, label)] = (total / int(count), path, int(count))
    if not rows:
        sys.exit("no dumps named by the benchmark were written")
    return rows


def offline(arguments):
    """OfflineBenchmarks' key lookups: read(_:), await execute(_:), typed DataService."""
    if len(arguments) < 2:
        sys.exit(__doc__)
    binary, kept = arguments[0], arguments[1]
    iterations = int(arguments[2]) if len(arguments) > 2 else 200
    out = arguments[3] if len(arguments) > 3 else ".build/bench-instructions-offline"
    with open(os.path.join(kept, "port"), encoding="utf-8") as port:
        root = f"http://127.0.0.1:{port.read().strip()}/"
    environment = dict(os.environ, OFFLINE_BENCH_WORK=os.path.abspath(kept),
                       OFFLINE_BENCH_ROOT=root, OFFLINE_BENCH_INSTRUCTIONS=str(iterations))
    rows = read_dumps(run_under_callgrind(binary, environment, out), out)
    print(f"OfflineBenchmarks' key lookup in instructions (callgrind, {iterations} lookups per row after 20 warm-up "
          "lookups, from a task on the global executor; every thread of the process)")
    print("")
    print("| entities | row | instructions / call | ÷ read() |")
    print("|---|---|---|---|")
    for (size, label), (value, *_) in rows.items():
        floor = rows.get((size, "key lookup, read()"), (None,))[0]
        print(f"| {size} | {label} | {value:,.0f} | {value / floor:.2f}× |" if floor else f"| {size} | {label} | {value:,.0f} | |")
    print("")
    print(f"Dumps: {out}/callgrind.out.* (callgrind_annotate --inclusive=yes FILE | swift demangle --simplified)")


if __name__ == "__main__":
    main()
