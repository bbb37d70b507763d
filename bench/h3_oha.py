#!/usr/bin/env python3
"""Requests per CPU-second of candor over HTTP/3 against oha's (`oha --http-version 3`), side by side.

One Caddy (`tls internal`, `respond` with a small static body; HTTP/3 is on by default) pinned to
CPU 1 serves both clients, each pinned to CPU 0, closed loop, one load thread, the same concurrency:

  candor run --h3 -R max -t 1 -c C --streams P -d Ns --ca ROOT URL
  oha --http-version 3 -z Ns -c C -p P --worker-threads 1 --no-tui --output-format json --cacert ROOT URL

In oha 1.x, `-c` is the number of connections and `-p` the number of requests in flight on each
one over HTTP/2 and HTTP/3 alike (its `http3_connection_fast_work_until` opens `-c` QUIC
connections and runs `-p` request loops on each: c * p in flight), which is candor's `-c` and
`--streams`. Both clients verify Caddy's certificate with its root (`--ca` / `--cacert`).
The two alternate which goes first each round, ROUNDS rounds; each client's CPU is the user +
system time of the child process (getrusage of the ended child; user and system apart too), its requests the completed
ones (candor's `requests.completed`; oha's `statusCodeDistribution`, summed). The summary prints
medians of requests/s, CPU-seconds, requests per CPU-second of each, and candor / oha.

  bench/h3_oha.py [--rounds 5] [--duration 5] [-c 4] [-p 8] [--oha PATH] [--caddy PATH]

Skips (exit 0, one line) when oha with HTTP/3 or Caddy is missing: `cargo install oha --locked
--features http3` and scripts/install-test-deps.sh (Caddy into target/test-tools/bin).
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import resource

from benchlib import REL, ROOT


def child_cpu():
    """User and system CPU seconds of every child that has ended so far (apart: the split says
    whether the client's time goes to its own work or to the kernel's sends and receives)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime, r.ru_stime)


def since(before):
    now = child_cpu()
    return (now[0] - before[0], now[1] - before[1])


def free_port():
    """A loopback port free for TCP and UDP (Caddy serves HTTP/1.1, 2 and 3 on it)."""
    while True:
        t = socket.socket()
        t.bind(("127.0.0.1", 0))
        port = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            u.close()
            t.close()


def find(name, given, local):
    """The tool given, or the repository's copy, or the one on the PATH; None when none is."""
    for p in (given, local, shutil.which(name)):
        if p and os.path.exists(p):
            return p
    return None


def start_caddy(caddy, tmp, pin):
    """Caddy serving a 5-byte body over HTTP/3 with its internal CA; the process, URL and root."""
    port = free_port()
    data = os.path.join(tmp, "data")
    conf = os.path.join(tmp, "Caddyfile")
    with open(conf, "w") as f:
        f.write("{\n\tadmin off\n\tauto_https disable_redirects\n\tskip_install_trust\n"
                f"\tstorage file_system {data}\n\tlog default {{\n\t\toutput discard\n\t}}\n}}\n"
                f"https://127.0.0.1:{port} {{\n\ttls internal\n\trespond \"hello\" 200\n}}\n")
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(tmp, "xdg"), XDG_CONFIG_HOME=os.path.join(tmp, "xdg"))
    p = subprocess.Popen(pin + [caddy, "run", "--adapter", "caddyfile", "--config", conf], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    leaf = os.path.join(data, "certificates", "local", "127.0.0.1", "127.0.0.1.crt")
    until = time.monotonic() + 30
    while True:
        if os.path.exists(leaf):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                pass
        if time.monotonic() > until or p.poll() is not None:
            p.kill()
            sys.exit(f"caddy did not start on port {port}")
        time.sleep(0.05)
    return p, f"https://127.0.0.1:{port}/", os.path.join(data, "pki", "authorities", "local", "root.crt")


def run_candor(pin, binary, a, url, root, tmp):
    path = os.path.join(tmp, "r.json")
    before = child_cpu()
    subprocess.run(pin + [binary, "run", "--h3", "-R", "max", "-t", "1", "-c", str(a.c), "--streams", str(a.p),
                          "-d", f"{a.duration}s", "-q", "--ca", root, "--json", path, url],
                   check=True, stdout=subprocess.DEVNULL)
    cpu = since(before)
    with open(path) as f:
        res = json.load(f)
    return res["requests"]["completed"], cpu


def run_oha(pin, binary, a, url, root):
    before = child_cpu()
    out = subprocess.run(pin + [binary, "--http-version", "3", "-z", f"{a.duration}s", "-c", str(a.c), "-p", str(a.p),
                                "--worker-threads", "1", "--no-tui", "--output-format", "json", "--cacert", root, url],
                         check=True, capture_output=True, text=True).stdout
    cpu = since(before)
    return sum(json.loads(out)["statusCodeDistribution"].values()), cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("-c", type=int, default=4, help="connections (candor -c, oha -c)")
    ap.add_argument("-p", type=int, default=8, help="requests in flight per connection (candor --streams, oha -p)")
    ap.add_argument("--oha", help="the oha to run (built with --features http3)")
    ap.add_argument("--caddy", help="the caddy to run")
    ap.add_argument("--candor", default=os.path.join(REL, "candor"), help="the candor to run (release)")
    a = ap.parse_args()
    oha = find("oha", a.oha, None)
    caddy = find("caddy", a.caddy, os.path.join(ROOT, "target", "test-tools", "bin", "caddy"))
    if oha is None:
        print("skipped: no oha (cargo install oha --locked --features http3, or --oha PATH)")
        return
    if "3" not in subprocess.run([oha, "--help"], capture_output=True, text=True).stdout.split("--http-version")[1][:200]:
        print(f"skipped: {oha} lists no HTTP/3 (build it with --features http3)")
        return
    if caddy is None:
        print("skipped: no caddy (scripts/install-test-deps.sh, or --caddy PATH)")
        return
    if not os.path.exists(a.candor):
        print(f"skipped: no {a.candor} (cargo build --release --bin candor)")
        return
    two = shutil.which("taskset") and (os.cpu_count() or 1) >= 2
    pin_s, pin_c = (["taskset", "-c", "1"], ["taskset", "-c", "0"]) if two else ([], [])
    tmp = tempfile.mkdtemp()
    server, url, root = start_caddy(caddy, tmp, pin_s)
    rows = {"candor": [], "oha": []}
    try:
        for r in range(a.rounds):
            order = ["candor", "oha"] if r % 2 == 0 else ["oha", "candor"]
            for who in order:
                if who == "candor":
                    rows[who].append(run_candor(pin_c, a.candor, a, url, root, tmp))
                else:
                    rows[who].append(run_oha(pin_c, oha, a, url, root))
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(
                f"{k} {v[-1][0]} requests in {sum(v[-1][1]):.2f} CPU-s" for k, v in rows.items()), flush=True)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    per = {k: statistics.median(n / sum(cpu) for n, cpu in v) for k, v in rows.items()}
    print(f"\nHTTP/3 against Caddy, closed loop, 1 client thread, -c {a.c} x {a.p} in flight per connection,"
          f" {a.duration}s x {a.rounds} rounds (medians)")
    print(f"{'client':<8} {'requests/s':>11} {'CPU-s':>7} {'user':>6} {'sys':>6} {'requests/CPU-s':>15}")
    for k, v in rows.items():
        rps = statistics.median(n for n, _ in v) / a.duration
        cpu = statistics.median(sum(c) for _, c in v)
        user = statistics.median(c[0] for _, c in v)
        sys_ = statistics.median(c[1] for _, c in v)
        print(f"{k:<8} {rps:>11,.0f} {cpu:>7.2f} {user:>6.2f} {sys_:>6.2f} {per[k]:>15,.0f}")
    print(f"candor / oha (requests per CPU-second): {per['candor'] / per['oha']:.2f}x")


if __name__ == "__main__":
    main()
