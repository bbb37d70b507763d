#!/usr/bin/env python3
"""Requests per CPU-second of candor with 1 and 2 load threads (issue 13, goal 7).

Starts `candor serve` (one thread, pinned to core 1) and runs candor's client pinned to core 0,
with `-t1` and `-t2` in turn over the same 64 connections, in a closed loop (`-R max`) and in an
open loop at RATE (default 20,000/s). CPU = user + system time of the client process (getrusage
of the child). Threads that share nothing on the hot path cost the same per request however many
there are, so the ratio t2/t1 of requests per CPU-second should be ~1.0 (the two threads here
share one core, which adds their context switches; on a machine with a core per thread they do
not). Every configuration runs ROUNDS times, interleaved; the summary quotes medians and ratios.

  bench/scaling.py [--rounds 3] [--duration 5] [--rate 20000] [--candor PATH]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--candor", default=os.path.join(ROOT, "target", "release", "candor"))
    a = ap.parse_args()
    if a.candor == os.path.join(ROOT, "target", "release", "candor"):
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "candor"], cwd=ROOT, check=True)
    pinned = (os.cpu_count() or 1) >= 2 and shutil.which("taskset")
    pin_server = ["taskset", "-c", "1"] if pinned else []
    pin_client = ["taskset", "-c", "0"] if pinned else []
    server = subprocess.Popen(pin_server + [a.candor, "serve", "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, text=True)
    url = next(w for w in server.stdout.readline().split() if w.startswith("http://")).rstrip(",") + "/"
    tmp = tempfile.mkdtemp()
    out = os.path.join(tmp, "r.json")
    cases = [(mode, t) for mode in ("closed", "open") for t in (1, 2)]
    rows = {c: [] for c in cases}
    load_before = os.getloadavg()
    try:
        for r in range(a.rounds):
            for mode, t in cases:
                rate = "max" if mode == "closed" else str(a.rate)
                cmd = pin_client + [a.candor, "run", "-q", "--json", out, "-R", rate, f"-t{t}",
                                    "-c64", "-d", f"{a.duration}s", url]
                before = child_cpu()
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode not in (0, 3):
                    sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
                cpu = child_cpu() - before
                with open(out) as f:
                    done = json.load(f)["requests"]["completed"]
                rows[(mode, t)].append(done / cpu)
            print(f"round {r + 1}/{a.rounds} done", flush=True)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    med = {c: statistics.median(v) for c, v in rows.items()}
    print(f"\n{a.candor}; {a.rounds} rounds of {a.duration}s; 64 connections; medians; "
          f"load average before / after {load_before} / {os.getloadavg()}")
    for mode in ("closed", "open"):
        label = "closed loop" if mode == "closed" else f"open loop at {a.rate:,}/s"
        one, two = med[(mode, 1)], med[(mode, 2)]
        print(f"{label}: requests per CPU-second, 1 thread {one:,.0f}, 2 threads {two:,.0f}, "
              f"ratio {two / one:.2f}")


if __name__ == "__main__":
    main()
