#!/usr/bin/env python3
"""CPU per request of candor over HTTPS (HTTP/1.1 and HTTP/2 over TLS), two candor builds side by side.

Closed loop on one client thread for DURATION seconds against the repository's local TLS servers,
pinned to CPU 1 (client on CPU 0): the `tls_server` example (HTTP/1.1, TLS 1.3, 16 connections)
and the `h2_server` example with `--tls` (HTTP/2 with ALPN h2, 4 connections x 16 streams).
CPU = user + system time of the client process (getrusage); requests = what candor reports as
completed. With --before PATH, a second candor binary (e.g. main's build) runs in the same
rounds, alternating with this tree's build (the order flips every round). Prints each round, then
medians and the after/before ratio of CPU per request.

  bench/https.py [--rounds 5] [--duration 8] [--before PATH]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import REL, ROOT, child_cpu, start  # noqa: F401 (the bench scripts' shared helpers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--before", help="another candor binary to measure in the same rounds")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "candor"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "candor-load",
                    "--example", "tls_server", "--example", "h2_server"], cwd=ROOT, check=True)
    pin_s = ["taskset", "-c", "1"] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else []
    pin_c = ["taskset", "-c", "0"] if pin_s else []
    builds = {"after": os.path.join(REL, "candor")}
    if a.before:
        builds["before"] = a.before
    tmp = tempfile.mkdtemp()
    servers = []
    try:
        ca1, ca2 = os.path.join(tmp, "ca1.pem"), os.path.join(tmp, "ca2.pem")
        s1, url1 = start([os.path.join(REL, "examples", "tls_server"), "127.0.0.1:0", ca1], pin_s)
        servers.append(s1)
        s2, url2 = start([os.path.join(REL, "examples", "h2_server"), "127.0.0.1:0", "--tls", ca2], pin_s)
        servers.append(s2)
        # The h2 server's certificate is for localhost.
        url2 = url2.replace("127.0.0.1", "localhost").rstrip("/") + "/"
        base = ["-R", "max", "-t1", "-d", f"{a.duration}s", "-q"]
        modes = {
            "https http/1.1, 16 connections": base + ["-c16", "--ca", ca1, url1],
            "https h2, 4 connections x 16 streams": base + ["-c4", "--h2", "--streams", "16", "--ca", ca2, url2],
        }
        rows = {(m, b): [] for m in modes for b in builds}
        for r in range(a.rounds):
            order = list(builds) if r % 2 == 0 else list(reversed(builds))
            for m, args in modes.items():
                for b in order:
                    path = os.path.join(tmp, "r.json")
                    before = child_cpu()
                    subprocess.run(pin_c + [builds[b], "run", "--json", path] + args, check=True, stdout=subprocess.DEVNULL)
                    cpu = child_cpu() - before
                    with open(path) as f:
                        res = json.load(f)
                    n, failed = res["requests"]["completed"], res["requests"]["failed"]
                    rows[(m, b)].append((n, cpu))
                    print(f"round {r + 1}: {m:<38} {b:<6} {n / a.duration:>9,.0f}/s "
                          f"{cpu / n * 1e6:>6.2f} CPU us/request, {failed} failed", flush=True)
    finally:
        for s in servers:
            s.terminate()
            s.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nclosed loop, 1 client thread, {a.duration}s x {a.rounds} rounds (medians)")
    for m in modes:
        us = {b: statistics.median(cpu / n * 1e6 for n, cpu in rows[(m, b)]) for b in builds}
        rps = {b: statistics.median(n for n, _ in rows[(m, b)]) / a.duration for b in builds}
        line = "  ".join(f"{b} {rps[b]:>9,.0f}/s {us[b]:>6.2f} us/request" for b in builds)
        ratio = f"  after/before CPU per request {us['after'] / us['before']:.3f}" if "before" in us else ""
        print(f"{m:<38} {line}{ratio}")


if __name__ == "__main__":
    main()
