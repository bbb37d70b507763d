#!/usr/bin/env python3
"""HTTP/2 requests per CPU-second: candor --h2 beside h2load (Debian's nghttp2-client), same run.

Both load a `nghttpd --no-tls` (Debian's nghttp2-server, a neutral HTTP/2 server) serving a
2-byte file, closed loop with CONNECTIONS connections x STREAMS streams on one thread for
DURATION seconds: `h2load -D D -c C -m S -t 1` and `candor run --h2 -R max -t 1 -c C --streams S
-d D`. The server is pinned to CPU 1, the clients to CPU 0; the tools alternate in pairs (the
order flips every round). CPU = user + system time of the client process (getrusage); requests
= what the client reports as completed. With --before PATH, a second candor binary (e.g. main's
build) runs in the same rounds, so before and after are measured side by side. Prints each
round, then medians and their ratio to h2load's.

  sudo apt-get install -y nghttp2-client nghttp2-server
  bench/h2load.py [--rounds 5] [--duration 5] [--connections 16] [--streams 16] [--before PATH]
"""

import argparse
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDOR = os.path.join(ROOT, "target", "release", "candor")


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nghttpd did not start listening on port {port}")


def run_h2load(pin, url, a):
    cmd = pin + ["h2load", "-D", str(a.duration), "-c", str(a.connections), "-m", str(a.streams), "-t", "1", url]
    before = child_cpu()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    cpu = child_cpu() - before
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
    if not m:
        sys.exit(f"unexpected h2load output:\n{out}")
    return int(m.group(1)), cpu


def run_candor(binary, pin, url, a, tmp):
    path = os.path.join(tmp, "out.json")
    cmd = pin + [
        binary, "run", "--h2", "-R", "max", "-t", "1", "-c", str(a.connections), "--streams", str(a.streams),
        "-d", f"{a.duration}s", "--quiet", "--json", path, url,
    ]
    before = child_cpu()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    cpu = child_cpu() - before
    with open(path) as f:
        r = json.load(f)["requests"]
    if r["failed"]:
        sys.exit(f"{binary}: {r['failed']} requests failed")
    return r["completed"], cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--before", help="another candor binary to measure in the same rounds")
    a = ap.parse_args()
    for tool in ("nghttpd", "h2load"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: sudo apt-get install -y nghttp2-client nghttp2-server")
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "candor"], cwd=ROOT, check=True)
    pin_s = ["taskset", "-c", "1"] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else []
    pin_c = ["taskset", "-c", "0"] if pin_s else []
    tmp = tempfile.mkdtemp()
    with open(os.path.join(tmp, "ok"), "w") as f:
        f.write("ok")
    port = free_port()
    server = subprocess.Popen(pin_s + ["nghttpd", "--no-tls", "-d", tmp, str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/ok"
    tools = [("h2load", lambda: run_h2load(pin_c, url, a)),
             ("candor", lambda: run_candor(CANDOR, pin_c, url, a, tmp))]
    if a.before:
        tools.append(("candor-before", lambda: run_candor(a.before, pin_c, url, a, tmp)))
    per_cpu = {name: [] for name, _ in tools}
    try:
        wait_listening(port)
        print(f"nghttpd --no-tls on CPU 1, clients on CPU 0; {a.connections} connections x {a.streams} streams, "
              f"one thread, {a.duration} s closed loop")
        for r in range(a.rounds):
            order = tools if r % 2 == 0 else list(reversed(tools))
            for name, run in order:
                n, cpu = run()
                per_cpu[name].append(n / cpu)
                print(f"round {r + 1}  {name:14} {n:9d} requests  {cpu:6.2f} CPU s  {n / cpu:10.0f} requests/CPU-s")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(per_cpu["h2load"])
    print("\nmedians (requests per CPU-second of the client process):")
    for name, _ in tools:
        m = statistics.median(per_cpu[name])
        print(f"  {name:14} {m:10.0f}  {m / base:5.2f}x h2load")


if __name__ == "__main__":
    main()
