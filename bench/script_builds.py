#!/usr/bin/env python3
"""Several candor builds running the same wrk script in the same open loop, interleaved: which
build's script path costs less (issue 25's CPU per request, measured without wrk).

Starts `candor serve` pinned to cpu 0; every client is pinned to cpu 1, one thread, 16
connections. Each round runs the first build without a script, then every build with
--script (bench/scripts/dynamic_request.lua by default), in an order that reverses every other
round. Prints, per build, the medians of: CPU µs per completed request (the client's user +
system time, wait4), candor's own in-Lua µs per request, send lag p99 and response time p99.

  python3 bench/script_builds.py --rounds 10 new=target/release/candor old=/path/to/candor
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

from benchlib import add_script_run_args, start

p = argparse.ArgumentParser()
add_script_run_args(p, rounds=8, seconds=3)
p.add_argument("builds", nargs="+", help="NAME=PATH of a candor binary")
a = p.parse_args()
builds = [b.split("=", 1) for b in a.builds]
work = tempfile.mkdtemp()
UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3}


def run(binary, script):
    out = os.path.join(work, "out.json")
    extra = ["-s", script] if script else []
    child = subprocess.Popen(
        ["taskset", "-c", "1", binary, "run", "-R", a.rate, "-t", "1", "-c", "16",
         "-d", f"{a.seconds}s", "--json", out, *extra, url],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    text = child.stdout.read()
    _, _, usage = os.wait4(child.pid, 0)
    v = json.load(open(out))
    n = v["requests"]["completed"]
    lua = re.search(r"spent ([\d.]+)(ns|us|ms) in Lua per intended request", text)
    p99 = lambda k: next(q["value_ns"] for q in v[k]["percentiles"] if q["percentile"] == 99.0)
    return ((usage.ru_utime + usage.ru_stime) * 1e6 / n,
            float(lua.group(1)) * UNITS[lua.group(2)] if lua else 0.0,
            p99("send_lag") / 1e3, p99("response_time") / 1e3)


server, url = start([builds[0][1], "serve", "--listen", "127.0.0.1:0"], ["taskset", "-c", "0"])
rows = {"no script": []}
rows.update({name: [] for name, _ in builds})
try:
    for r in range(a.rounds):
        rows["no script"].append(run(builds[0][1], None))
        for name, binary in (builds if r % 2 == 0 else builds[::-1]):
            rows[name].append(run(binary, a.script))
        print(f"round {r + 1}/{a.rounds}: " + "; ".join(
            f"{k} {v[-1][0]:.1f}" for k, v in rows.items()), flush=True)
finally:
    server.kill()
print()
print("| run | CPU µs per request | in Lua µs per request | send lag p99 µs | response time p99 µs |")
print("|---|---|---|---|---|")
for name, v in rows.items():
    med = [statistics.median(x[i] for x in v) for i in range(4)]
    print(f"| {name} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.1f} | {med[3]:.1f} |")
