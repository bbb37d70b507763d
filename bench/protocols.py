#!/usr/bin/env python3
"""CPU per request of each candor protocol mode, side by side in one run, with wrk as the peer.

Each mode runs closed loop (`-R max -t1 -c16`) for DURATION seconds against a local server of its
kind pinned to core 1 (client pinned to core 0): `candor serve` for HTTP/1.1 and pipelining, the
`tls_server` example for HTTPS, the `echo_server` example for raw TCP, and the `h2_server`
example for HTTP/2 when it exists. CPU = user + system time of the client process (getrusage).
Modes run interleaved for ROUNDS rounds; the summary quotes medians and the ratio to candor's
plain HTTP/1.1.

  bench/protocols.py [--rounds 3] [--duration 8] [--baseline PATH/TO/OLDER/candor]

With --baseline, an older candor binary runs every candor mode in the same rounds, alternating
with this one (which goes first is swapped each round), and the summary adds the new/baseline
ratio of CPU per request: a change's before/after, measured side by side. The gRPC mode runs
against `candor-grpc-test-server` when it is built (`cargo build --release -p candor-grpc
--features test-server --bin candor-grpc-test-server`).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import REL, ROOT, child_cpu, start  # noqa: F401 (the bench scripts' shared helpers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--baseline", help="an older candor binary to run beside this one")
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "candor"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "candor-load", "--examples"], cwd=ROOT, check=True)
    pin_s = ["taskset", "-c", "1"] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else []
    pin_c = ["taskset", "-c", "0"] if pin_s else []
    tmp = tempfile.mkdtemp()
    servers = []
    try:
        http, http_url = start([os.path.join(REL, "candor"), "serve", "--listen", "127.0.0.1:0"], pin_s)
        servers.append(http)
        ca = os.path.join(tmp, "ca.pem")
        tls, tls_url = start([os.path.join(REL, "examples", "tls_server"), "127.0.0.1:0", ca], pin_s)
        servers.append(tls)
        echo, echo_url = start([os.path.join(REL, "examples", "echo_server"), "127.0.0.1:0"], pin_s)
        servers.append(echo)
        base = ["-R", "max", "-t1", "-c16", "-d", f"{a.duration}s", "-q"]
        modes = {
            "candor http/1.1": base + [http_url + "/"],
            "candor http/1.1 --pipeline 8": base + ["--pipeline", "8", http_url + "/"],
            "candor https (http/1.1)": base + ["--ca", ca, tls_url],
            "candor tcp echo (16 B)": base + ["--payload", "0123456789abcde\\n", "--expect-delimiter", "\\n", echo_url],
        }
        h2_bin = os.path.join(REL, "examples", "h2_server")
        if os.path.exists(h2_bin):
            h2, h2_url = start([h2_bin, "127.0.0.1:0"], pin_s)
            servers.append(h2)
            modes["candor h2c (streams 16/conn)"] = base + ["--h2", "--streams", "16", h2_url.rstrip("/") + "/"]
        grpc_bin = os.path.join(REL, "candor-grpc-test-server")
        if os.path.exists(grpc_bin):
            grpc, grpc_addr = start_grpc(grpc_bin, pin_s)
            servers.append(grpc)
            proto = os.path.join(ROOT, "crates", "candor-grpc", "tests", "proto", "bench.proto")
            modes["candor grpc unary (streams 16/conn)"] = base + [
                "--streams", "16", "--proto", proto, "--call", "candor.bench.Bench/Echo",
                "--body", '{"name":"bench","seq":1}', f"grpc://{grpc_addr}"]
        binaries = [("", os.path.join(REL, "candor"))]
        if a.baseline:
            binaries.append((" [baseline]", os.path.abspath(a.baseline)))
        rows = {"wrk http/1.1 (peer)": []}
        rows.update({m + tag: [] for m in modes for tag, _ in binaries})
        for r in range(a.rounds):
            before = child_cpu()
            out = subprocess.run(pin_c + ["wrk", "-t1", "-c16", f"-d{a.duration}s", http_url + "/"], capture_output=True, text=True, check=True).stdout
            n = int(re.search(r"(\d+) requests in", out).group(1))
            rows["wrk http/1.1 (peer)"].append((n, child_cpu() - before))
            order = binaries if r % 2 == 0 else binaries[::-1]
            for name, args in modes.items():
                for tag, binary in order:
                    path = os.path.join(tmp, "r.json")
                    before = child_cpu()
                    subprocess.run(pin_c + [binary, "run", "--json", path] + args, check=True, stdout=subprocess.DEVNULL)
                    cpu = child_cpu() - before
                    with open(path) as f:
                        res = json.load(f)
                    rows[name + tag].append((res["requests"]["completed"], cpu))
            print(f"round {r + 1}/{a.rounds} done", flush=True)
    finally:
        for s in servers:
            s.terminate()
            s.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    us = {k: statistics.median(cpu / n * 1e6 for n, cpu in v) for k, v in rows.items()}
    ref = us["candor http/1.1"]
    print(f"\nclosed loop, 1 client thread, 16 connections, {a.duration}s x {a.rounds} rounds (medians)")
    print(f"{'mode':<34} {'requests/s':>11} {'CPU us/req':>11} {'vs http/1.1':>12}")
    for k, v in rows.items():
        rps = statistics.median(n for n, _ in v) / a.duration
        print(f"{k:<45} {rps:>11,.0f} {us[k]:>11.2f} {us[k] / ref:>11.2f}x")
    if a.baseline:
        print("\nnew / baseline CPU per request (1.00 = the same; below 1 the new one is cheaper)")
        for m in modes:
            print(f"{m:<45} {us[m] / us[m + ' [baseline]']:>11.3f}")


def start_grpc(binary, pin):
    """Starts the gRPC test server on a free port; it prints its address on its first line."""
    proc = subprocess.Popen(pin + [binary, "--addr", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    return proc, line.split("listening on")[-1].strip().replace("http://", "")


if __name__ == "__main__":
    main()
