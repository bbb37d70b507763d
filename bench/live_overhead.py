#!/usr/bin/env python3
"""CPU cost per request of `candor run` with and without `--live`, side by side in the same run.

Starts one fast local server (`candor serve`, pinned to one core), then alternates runs of
`candor run -t1 -cC -dD` (pinned to the other core) without and with `--live 127.0.0.1:0`. During
the live runs this script acts as the audience: it scrapes /metrics every second (as Prometheus
would) and keeps /events open (as the page does), so the live server does its real work inside the
measured process. CPU = user + system time of the candor process (getrusage of the child),
requests = completed requests from its JSON results.

Two loads: closed loop (-R max, the most requests per CPU-second, where any per-request cost would
show) and an open loop at RATE. Every configuration runs ROUNDS times, interleaved; the summary
quotes medians and the with/without ratio. Usage:

  bench/live_overhead.py [--rounds 3] [--duration 10] [--connections 50] [--rate 20000]
"""

import argparse
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDOR = os.path.join(ROOT, "target", "release", "candor")


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def http_get(host, port, path):
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                return out
            out += b


def audience(stderr, stop):
    """Reads candor's stderr for the live address, then scrapes and follows events until stop."""
    addr = None
    for line in stderr:
        m = re.search(r"live view at http://([0-9.]+):(\d+)/", line)
        if m:
            addr = (m.group(1), int(m.group(2)))
            break
    if addr is None:
        return
    threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()

    def follow():
        try:
            with socket.create_connection(addr, timeout=60) as s:
                s.sendall(b"GET /events HTTP/1.1\r\n\r\n")
                while s.recv(65536):
                    pass
        except OSError:
            pass

    threading.Thread(target=follow, daemon=True).start()
    while not stop.is_set():
        try:
            http_get(addr[0], addr[1], "/metrics")
        except OSError:
            pass
        stop.wait(1.0)


def one_run(args, live):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        cmd = ["taskset", "-c", "0", CANDOR, "run", "--quiet", "--json", path] + args
        if live:
            cmd += ["--live", "127.0.0.1:0", "--live-linger", "0s"]
        before = child_cpu()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        stop = threading.Event()
        t = threading.Thread(target=audience, args=(p.stderr, stop), daemon=True)
        t.start()
        if p.wait() != 0:
            sys.exit(f"candor failed: {cmd}")
        stop.set()
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
    subprocess.run(["cargo", "build", "--release", "--bin", "candor"], cwd=ROOT, check=True)
    server = subprocess.Popen(
        ["taskset", "-c", "1", CANDOR, "serve", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True)
    url = re.search(r"http://\S+", server.stdout.readline()).group(0).rstrip(",")
    loads = {
        "closed loop": ["-R", "max"],
        f"open loop {a.rate}/s": ["-R", str(a.rate)],
    }
    base = ["-t", "1", "-c", str(a.connections), "-d", f"{a.duration}s", url]
    results = {(name, live): [] for name in loads for live in (False, True)}
    try:
        for r in range(a.rounds):
            for name, load in loads.items():
                for live in (False, True):
                    cpu, done = one_run(load + base, live)
                    us = 1e6 * cpu / max(done, 1)
                    results[(name, live)].append((done / a.duration, us))
                    print(f"round {r + 1} {name:>22} {'--live' if live else 'plain':>6}: "
                          f"{done / a.duration:>10.0f} req/s, {us:6.2f} CPU us/request", flush=True)
    finally:
        server.kill()
    print("\nmedians:")
    print("| load | without --live: CPU µs/request | with --live (scraped, page open) | ratio |")
    print("|---|---|---|---|")
    for name in loads:
        plain = statistics.median(u for _, u in results[(name, False)])
        live = statistics.median(u for _, u in results[(name, True)])
        print(f"| {name} | {plain:.2f} | {live:.2f} | {live / plain:.3f} |")


if __name__ == "__main__":
    main()
