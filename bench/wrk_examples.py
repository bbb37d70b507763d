#!/usr/bin/env python3
"""wrk's example scripts under wrk and under candor, side by side (issue 25).

For each script of bench/scripts/wrk_examples/ (candor's own equivalents of the wrk
repository's examples: addr, auth, counter, delay, pipeline, post, report, setup, stop), runs
`wrk -t2 -c4 -d2s -s SCRIPT URL` and `candor run -R max -t 2 -c 4 -d 2s -s SCRIPT URL` against
one `candor serve` (server on cpu 0, clients on cpu 1, closed loop: wrk has no other), and prints
both outputs in two columns, with each tool's exit code. pipeline.lua also runs candor with
`--pipeline 4` (wrk writes the four requests back to back on one connection).

  python3 bench/wrk_examples.py [--wrk PATH] [--candor PATH] [--seconds 2] [--width 62]

wrk is found on PATH or given with --wrk; it is never part of the repository.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--wrk", default=shutil.which("wrk"))
p.add_argument("--candor", default=os.path.join(ROOT, "target", "release", "candor"))
p.add_argument("--seconds", type=int, default=2)
p.add_argument("--width", type=int, default=62, help="of the wrk column (candor's is not wrapped)")
p.add_argument("--only", help="run only the script of this name")
a = p.parse_args()
if not a.wrk:
    sys.exit("wrk not found: install it (Debian: apt-get install wrk) or pass --wrk PATH")

server = subprocess.Popen(["taskset", "-c", "0", a.candor, "serve", "--listen", "127.0.0.1:0"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
url = None
deadline = time.time() + 10
while url is None and time.time() < deadline:
    line = server.stdout.readline()
    m = re.search(r"http://[0-9.]+:[0-9]+", line)
    if m:
        url = m.group(0) + "/"
if url is None:
    server.kill()
    sys.exit("candor serve did not say where it listens")


def run(cmd):
    """cmd's stdout and stderr together, and its exit code."""
    r = subprocess.run(["taskset", "-c", "1"] + cmd, capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    return (r.stdout + r.stderr).rstrip("\n"), r.returncode


def column(text, width):
    lines = []
    for line in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(line.expandtabs(), width, drop_whitespace=False) or [""])
    return lines


def side_by_side(left_title, left, right_title, right):
    w = a.width
    out = [f"{left_title:<{w}} | {right_title}", f"{'-' * w}-+-{'-' * w}"]
    l, r = column(left, w), right.splitlines()
    for i in range(max(len(l), len(r))):
        x = l[i] if i < len(l) else ""
        y = r[i] if i < len(r) else ""
        out.append(f"{x:<{w}} | {y}".rstrip())
    return "\n".join(out)


try:
    d = f"{a.seconds}s"
    for script in sorted(glob.glob(os.path.join(ROOT, "bench", "scripts", "wrk_examples", "*.lua"))):
        name = os.path.basename(script)
        script = os.path.relpath(script, ROOT)
        if a.only and name not in (a.only, a.only + ".lua"):
            continue
        wrk_out, wrk_code = run([a.wrk, "-t2", "-c4", f"-d{d}", "-s", script, url])
        extra = [["--pipeline", "4"]] if name == "pipeline.lua" else []
        runs = [[]] + extra
        for flags in runs:
            cmd = [a.candor, "run", "-R", "max", "-t", "2", "-c", "4", "-d", d, *flags, "-s", script, url]
            candor_out, candor_code = run(cmd)
            title = " ".join(["candor run -R max -t 2 -c 4", f"-d {d}", *flags, "-s", name])
            print(f"=== {name} ===")
            print(side_by_side(f"wrk -t2 -c4 -d{d} -s {name}  (exit {wrk_code})", wrk_out,
                               f"{title}  (exit {candor_code})", candor_out))
            print()
finally:
    server.kill()
    server.wait()
