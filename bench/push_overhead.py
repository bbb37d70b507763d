#!/usr/bin/env python3
"""CPU cost per request of `candor run` with and without `--out prometheus-rw=URL`, side by side.

Starts one fast local server (`candor serve`) and a remote-write sink in this script (answers
every POST with 204 after reading it); the server, this script and its sink are pinned to one core
(SERVER_CPU), each `candor run -t1 -cC -dD -R RATE` to the other (CLIENT_CPU), so that nothing of
the benchmark's own shares candor's core. Runs without and with
`--out prometheus-rw=http://127.0.0.1:PORT/api/v1/write --push-interval 1s` (a push every second,
the most work the output does) alternate, swapping which goes first every round, after one
discarded warm-up pair. Measured per run:

- CPU = user + system time of the candor process, from its own rusage (`wait4`), per completed
  request (from its JSON results);
- the CPU of the push thread (`candor-push-*`: encoding and POSTs) and of the collector thread
  (`candor-collect`: where the push's series are built from each interval), read from
  /proc/PID/task while the run goes, at the kernel's clock-tick resolution, per completed request.

The summary quotes the medians, the median of the per-round ratios (with/without, each pair run
back to back, so that a drift of the machine's load cancels) and their range. Usage:

  bench/push_overhead.py [--rounds 10] [--duration 8] [--connections 50] [--rate 20000]

The binary is CANDOR (default target/release/candor under CARGO_TARGET_DIR or the repository);
build it first with `cargo build --release --bin candor`.
"""

import argparse
import http.server
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CANDOR = os.environ.get("CANDOR", os.path.join(TARGET, "release", "candor"))
CLIENT_CPU = int(os.environ.get("CLIENT_CPU", "0"))
SERVER_CPU = int(os.environ.get("SERVER_CPU", "1"))
TICK = os.sysconf("SC_CLK_TCK")


class Sink(http.server.BaseHTTPRequestHandler):
    """A remote-write receiver that takes everything and keeps nothing."""
    protocol_version = "HTTP/1.1"
    posts = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Sink.posts += 1
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def thread_cpu(pid):
    """CPU seconds so far of the process's push threads and of its collector thread (where the
    push's series are built once per interval); None once it has ended."""
    total = {"candor-push": 0, "candor-collect": 0}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        for prefix in total:
            if name.startswith(prefix):
                fields = stat[stat.rindex(")") + 2:].split()
                total[prefix] += int(fields[11]) + int(fields[12])  # utime, stime (14, 15)
    return {k: v / TICK for k, v in total.items()}


def run_reaped(args, out):
    """One run: its own CPU from wait4 (reaped here), completed requests, the push thread's CPU."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        cmd = ["taskset", "-c", str(CLIENT_CPU), CANDOR, "run", "--quiet", "--json", path] + args
        if out:
            cmd += ["--out", out, "--push-interval", "1s"]
        err_path = os.path.join(d, "stderr")
        with open(err_path, "w") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        threads = {"candor-push": 0.0, "candor-collect": 0.0}
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            seen = thread_cpu(p.pid)
            if seen is not None:
                threads = {k: max(threads[k], seen[k]) for k in threads}
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)
        with open(err_path) as f:
            stderr = f.read()
        if p.returncode != 0 or "dropped" in stderr:
            sys.exit(f"candor failed or dropped samples: {cmd}\n{stderr}")
        with open(path) as f:
            done = json.load(f)["requests"]["completed"]
        return ru.ru_utime + ru.ru_stime, done, threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--rate", type=int, default=20000)
    a = ap.parse_args()
    # This script and its sink thread stay off candor's core.
    os.sched_setaffinity(0, {SERVER_CPU})
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    out = f"prometheus-rw=http://127.0.0.1:{sink.server_address[1]}/api/v1/write"
    server = subprocess.Popen(
        ["taskset", "-c", str(SERVER_CPU), CANDOR, "serve", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True)
    url = re.search(r"http://\S+", server.stdout.readline()).group(0).rstrip(",")
    base = ["-R", str(a.rate), "-t", "1", "-c", str(a.connections), "-d", f"{a.duration}s", url]
    results = {False: [], True: []}
    ratios, push_us = [], []
    collect_us = {False: [], True: []}
    try:
        # One discarded pair: caches, the server's first connections, CPU frequency.
        for push in (False, True):
            run_reaped(base, out if push else None)
        for r in range(a.rounds):
            # Alternate which goes first, so a drift in the machine's load favours neither.
            order = (False, True) if r % 2 == 0 else (True, False)
            pair = {}
            for push in order:
                cpu, done, threads = run_reaped(base, out if push else None)
                us = 1e6 * cpu / max(done, 1)
                collect_us[push].append(1e6 * threads["candor-collect"] / max(done, 1))
                pair[push] = us
                results[push].append(us)
                line = (f"round {r + 1:>2} {'--out' if push else 'plain':>6}: "
                        f"{done / a.duration:>10.0f} req/s, {us:6.2f} CPU us/request")
                line += f" (collector {collect_us[push][-1]:.3f}"
                if push:
                    push_us.append(1e6 * threads["candor-push"] / max(done, 1))
                    line += f", push thread {push_us[-1]:.3f}"
                line += ")"
                print(line, flush=True)
            ratios.append(pair[True] / pair[False])
    finally:
        server.kill()
        sink.shutdown()
    plain = statistics.median(results[False])
    push = statistics.median(results[True])
    ratio = statistics.median(ratios)
    print(f"\nremote-write POSTs taken by the sink: {Sink.posts}")
    print("| load | rounds | CPU µs/request without --out | with --out (push every 1 s) "
          "| ratio (median of pairs) | pair ratios | collector thread µs/request without / with "
          "| push thread µs/request |")
    print("|---|---|---|---|---|---|---|---|")
    collect = " / ".join(f"{statistics.median(collect_us[k]):.3f}" for k in (False, True))
    thread = statistics.median(push_us)
    if thread == 0:
        # Under one clock tick in every run: say the bound, not a zero.
        thread = f"< {1e6 / TICK / (a.rate * a.duration):.3f} (under one {1000 // TICK} ms tick per run)"
    else:
        thread = f"{thread:.3f}"
    print(f"| open loop {a.rate}/s | {a.rounds} | {plain:.2f} | {push:.2f} | {ratio:.3f} "
          f"| {min(ratios):.3f} .. {max(ratios):.3f} | {collect} | {thread} |")


if __name__ == "__main__":
    main()
