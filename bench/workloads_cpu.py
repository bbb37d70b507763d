#!/usr/bin/env python3
"""CPU per request of the workload features against a plain run at the same rate (issue 12).

Starts `candor serve`, then runs each case for 5 s at 10,000/s (1 thread, 16 connections,
--spin 0 so that the spin does not dominate), interleaved for --rounds rounds, and prints the
user + system CPU of the candor process per completed request (getrusage of the child): every
round, and the median. The replay case includes the trace's scan before the run and its reader
thread, since both are the client's CPU.
"""
import argparse
import json
import os
import subprocess
import tempfile

p = argparse.ArgumentParser()
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--candor", default="target/release/candor")
args = p.parse_args()

work = tempfile.mkdtemp()
reqs = os.path.join(work, "reqs.jsonl")
with open(reqs, "w") as f:
    f.write('{"name":"a","path":"/a/{{seq}}","weight":3}\n')
    f.write('{"name":"b","path":"/b/{{uuid}}","headers":{"X-R":"{{random:1:99}}"},"weight":1}\n')
trace = os.path.join(work, "trace.jsonl")
with open(trace, "w") as f:
    for i in range(50_000):
        f.write(json.dumps({"at": i / 10_000, "path": f"/r/{i}"}) + "\n")

server = subprocess.Popen(
    [args.candor, "serve", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True
)
url = next(w for w in server.stdout.readline().split() if w.startswith("http://")).rstrip(",")
cases = {
    "one rate (-R 10k -d 5s)": ["-R", "10k", "-d", "5s"],
    "profile (-R 10k:5s)": ["-R", "10k:5s"],
    "templates + weights + body and header checks": [
        "-R", "10k", "-d", "5s", "--requests", reqs,
        "--check-body", "ok", "--check-header", "Content-Length: 2",
    ],
    "replay (50k records over 5 s)": ["--replay", trace],
}
results = {k: [] for k in cases}
try:
    for _ in range(args.rounds):
        for name, extra in cases.items():
            out = os.path.join(work, "out.json")
            child = subprocess.Popen(
                [args.candor, "run", "-q", "-t", "1", "-c", "16", "--spin", "0", *extra,
                 url, "--json", out],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            _, _, usage = os.wait4(child.pid, 0)
            done = json.load(open(out))["requests"]["completed"]
            results[name].append((usage.ru_utime + usage.ru_stime) / done * 1e6)
finally:
    server.kill()
print("| case | CPU µs per request, each round | median |")
print("|---|---|---|")
for name, v in results.items():
    s = sorted(v)
    print(f"| {name} | {' / '.join(f'{x:.2f}' for x in v)} | {s[len(s) // 2]:.2f} |")
