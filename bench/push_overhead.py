#!/usr/bin/env python3
"""CPU cost per request of `candor run` with and without `--out prometheus-rw=URL`, side by side.

Starts one fast local server (`candor serve`, pinned to one core) and a remote-write sink in this
script (answers every POST with 204 after reading it), then alternates runs of
`candor run -t1 -cC -dD -R RATE` (pinned to the other core) without and with
`--out prometheus-rw=http://127.0.0.1:PORT/api/v1/write --push-interval 1s` (a push every second,
the most work the output does). CPU = user + system time of the candor process (getrusage of the
child), requests = completed requests from its JSON results. Every configuration runs ROUNDS times,
interleaved; the summary quotes medians and the with/without ratio. Usage:

  bench/push_overhead.py [--rounds 3] [--duration 10] [--connections 50] [--rate 20000]

The binary is CANDOR (default target/release/candor under CARGO_TARGET_DIR or the repository);
build it first with `cargo build --release --bin candor`.
"""

import argparse
import http.server
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CANDOR = os.environ.get("CANDOR", os.path.join(TARGET, "release", "candor"))


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


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(args, out):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        cmd = ["taskset", "-c", "0", CANDOR, "run", "--quiet", "--json", path] + args
        if out:
            cmd += ["--out", out, "--push-interval", "1s"]
        before = child_cpu()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0 or "dropped" in p.stderr:
            sys.exit(f"candor failed or dropped samples: {cmd}\n{p.stderr}")
        cpu = child_cpu() - before
        with open(path) as f:
            done = json.load(f)["requests"]["completed"]
        return cpu, done


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--rate", type=int, default=20000)
    a = ap.parse_args()
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    out = f"prometheus-rw=http://127.0.0.1:{sink.server_address[1]}/api/v1/write"
    server = subprocess.Popen(
        ["taskset", "-c", "1", CANDOR, "serve", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True)
    url = re.search(r"http://\S+", server.stdout.readline()).group(0).rstrip(",")
    base = ["-R", str(a.rate), "-t", "1", "-c", str(a.connections), "-d", f"{a.duration}s", url]
    results = {False: [], True: []}
    try:
        for r in range(a.rounds):
            # Alternate which goes first, so a drift in the machine's load favours neither.
            order = (False, True) if r % 2 == 0 else (True, False)
            for push in order:
                cpu, done = one_run(base, out if push else None)
                us = 1e6 * cpu / max(done, 1)
                results[push].append(us)
                print(f"round {r + 1} {'--out' if push else 'plain':>6}: "
                      f"{done / a.duration:>10.0f} req/s, {us:6.2f} CPU us/request", flush=True)
    finally:
        server.kill()
        sink.shutdown()
    plain = statistics.median(results[False])
    push = statistics.median(results[True])
    print(f"\nremote-write POSTs taken by the sink: {Sink.posts}")
    print("| load | CPU µs/request without --out | with --out (push every 1 s) | ratio |")
    print("|---|---|---|---|")
    print(f"| open loop {a.rate}/s | {plain:.2f} | {push:.2f} | {push / plain:.3f} |")


if __name__ == "__main__":
    main()
