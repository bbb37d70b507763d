#!/usr/bin/env python3
"""What a wrk Lua script costs (issue 25): candor vs wrk running the same script, and candor
with the script against candor without it.

Starts `candor serve` pinned to cpu 0; every client is pinned to cpu 1, one thread each, and the
runs alternate for --rounds rounds (a peer side by side with candor in the same session):

  closed loop: bench/scripts/dynamic_request.lua (a new path and header per call), 16
    connections, --seconds each: `wrk -t1 -c16 -s SCRIPT` and `candor run -R max -t 1 -c 16
    -s SCRIPT` (and candor without the script); completed requests per CPU-second of the
    client (user + system, wait4).
  open loop at --rate: `candor run -R RATE -t 1 -c 16` with and without the script: CPU µs per
    completed request and send lag p99.

Prints each round and the medians and ratios. wrk is found on PATH or given with --wrk; it is
never part of the repository.
"""
import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import add_script_run_args

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
add_script_run_args(p, rounds=3, seconds=5)
p.add_argument("--candor", default=os.path.join(ROOT, "target", "release", "candor"))
p.add_argument("--wrk", default=shutil.which("wrk"))
a = p.parse_args()
if not a.wrk:
    sys.exit("wrk not found: install it (Debian: apt-get install wrk) or pass --wrk PATH")
SERVER = ["taskset", "-c", "0"]
CLIENT = ["taskset", "-c", "1"]
work = tempfile.mkdtemp()


def measured(cmd):
    """Runs cmd; returns (stdout, CPU seconds of that child)."""
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = child.stdout.read()
    _, _, usage = os.wait4(child.pid, 0)
    return out, usage.ru_utime + usage.ru_stime


def candor(extra):
    """A candor run; returns (completed, cpu seconds, send lag p99 in µs)."""
    out = os.path.join(work, "out.json")
    _, cpu = measured(CLIENT + [a.candor, "run", "-q", "-t", "1", "-c", "16", "-d", f"{a.seconds}s",
                                *extra, url, "--json", out])
    v = json.load(open(out))
    lag = next(q["value_ns"] for q in v["send_lag"]["percentiles"] if q["percentile"] == 99.0)
    return v["requests"]["completed"], cpu, lag / 1e3


def wrk():
    text, cpu = measured(CLIENT + [a.wrk, "-t1", "-c16", f"-d{a.seconds}s", "-s", a.script, url])
    m = re.search(r"(\d+) requests in", text)
    if not m:
        sys.exit(f"no request count in wrk's output: {text}")
    return int(m.group(1)), cpu, None


server = subprocess.Popen(SERVER + [a.candor, "serve", "--listen", "127.0.0.1:0"],
                          stdout=subprocess.PIPE, text=True)
url = next(w for w in server.stdout.readline().split() if w.startswith("http://")).rstrip(",")
cases = {
    "wrk closed, script": wrk,
    "candor closed (-R max), script": lambda: candor(["-R", "max", "-s", a.script]),
    "candor closed (-R max), no script": lambda: candor(["-R", "max"]),
    f"candor open (-R {a.rate}), script": lambda: candor(["-R", a.rate, "-s", a.script]),
    f"candor open (-R {a.rate}), no script": lambda: candor(["-R", a.rate]),
}
rows = {k: [] for k in cases}
try:
    for r in range(a.rounds):
        # Every other round in the reverse order, so that a machine getting busier or quieter
        # during the session weighs on each case alike.
        order = list(cases.items()) if r % 2 == 0 else list(cases.items())[::-1]
        for name, run in order:
            rows[name].append(run())
        print(f"round {r + 1}/{a.rounds}: " + "; ".join(
            f"{k}: {v[-1][0]} req {v[-1][1]:.2f} cpu-s" for k, v in rows.items()), flush=True)
finally:
    server.kill()


def per_cpu(name):
    return statistics.median(n / cpu for n, cpu, _ in rows[name])


def us_per_req(name):
    return statistics.median(cpu / n * 1e6 for n, cpu, _ in rows[name])


print()
print("| run | requests/s | requests per CPU-second | CPU µs per request | send lag p99 |")
print("|---|---|---|---|---|")
for name in cases:
    rps = statistics.median(n for n, _, _ in rows[name]) / a.seconds
    lags = [lag for _, _, lag in rows[name] if lag is not None]
    lag = f"{statistics.median(lags):.1f} µs" if lags else "-"
    print(f"| {name} | {rps:,.0f} | {per_cpu(name):,.0f} | {us_per_req(name):.2f} | {lag} |")
closed = per_cpu("candor closed (-R max), script") / per_cpu("wrk closed, script")
closed_cost = us_per_req("candor closed (-R max), script") - us_per_req("candor closed (-R max), no script")
opened = us_per_req(f"candor open (-R {a.rate}), script") / us_per_req(f"candor open (-R {a.rate}), no script")

def ratio_interval(num, den, resamples=2000):
    """A 95% percentile-bootstrap interval of median(num) / median(den), rounds resampled."""
    rng = random.Random(1)
    rounds = range(len(rows[num]))
    ratios = []
    for _ in range(resamples):
        pick = [rng.choice(rounds) for _ in rounds]
        top = statistics.median(rows[num][i][1] / rows[num][i][0] for i in pick)
        bottom = statistics.median(rows[den][i][1] / rows[den][i][0] for i in pick)
        ratios.append(top / bottom)
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


open_script = f"candor open (-R {a.rate}), script"
open_plain = f"candor open (-R {a.rate}), no script"
per_round = [(s[1] / s[0]) / (p[1] / p[0]) for s, p in zip(rows[open_script], rows[open_plain])]
low, high = ratio_interval(open_script, open_plain)
print()
print(f"closed loop, requests per CPU-second, candor/wrk: {closed:.3f} (goal >= 1.0)")
print(f"closed loop, CPU µs per request the script adds to candor: {closed_cost:.2f}")
print(f"open loop at {a.rate}, CPU per request, script/no script: {opened:.3f} (goal <= 1.3); "
      f"95% bootstrap interval {low:.3f}-{high:.3f}; per round "
      + " ".join(f"{x:.2f}" for x in per_round)
      + f" (median {statistics.median(per_round):.3f})")
