#!/usr/bin/env python3
"""gRPC: candor beside ghz against the same tonic test server, same session (issue 28).

Two measurements, the tools alternating in pairs (the order flips every round):

1. Closed loop, unary `candor.bench.Bench/Echo`, 16 calls in flight on one connection for
   DURATION seconds: `ghz -c 16 --connections 1 -z Ds` and `candor run grpc://... -R max -t 1
   -c 1 --streams 16 -d Ds`. Calls per CPU-second of the client process (user + system time,
   getrusage of the child). Beside them `candor-h2`: candor sending the same calls as plain
   HTTP/2 requests (`http://.../candor.bench.Bench/Echo --h2 -m POST`, the framed message as the
   body, gRPC's headers), which tells what the gRPC flavour adds to candor's HTTP/2 path.
2. Fixed rate RATE/s for RATE_DURATION seconds: `ghz --rps R -c 10` (the issue's command) and
   `candor run -R R -c 1 --streams 16`: the achieved rate and its spread per second (calls
   answered in each whole second of the run, from ghz's per-call timestamps and candor's
   intervals).

The server (`candor-grpc-test-server`, built here with `--features test-server`, one
thread: a current-thread tokio runtime) is pinned to CPU 0 and the clients to CPU 1 with taskset. ghz is not part of the
project: build it beside it (`GOBIN=/work/wt/tools/bin go install
github.com/bojand/ghz/cmd/ghz@v0.120.0`) and give its path.

  bench/grpc_ghz.py --ghz /work/wt/tools/bin/ghz [--rounds 3] [--duration 5] [--rate 1000]
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDOR = os.path.join(ROOT, "target", "release", "candor")
SERVER = os.path.join(ROOT, "target", "release", "candor-grpc-test-server")
PROTO = os.path.join(ROOT, "crates", "candor-grpc", "tests", "proto", "bench.proto")
BODY = '{"name":"bench","seq":1}'


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start_server(pin, threads):
    p = subprocess.Popen(pin + [SERVER, "--addr", "127.0.0.1:0", "--threads", str(threads)],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if not line.startswith("listening on "):
        p.kill()
        sys.exit(f"unexpected server line {line!r}")
    return p, line.removeprefix("listening on ")


def ghz_version(ghz):
    """The module version `go install` built, since a binary built that way says only `dev`."""
    if shutil.which("go"):
        out = subprocess.run(["go", "version", "-m", ghz], capture_output=True, text=True).stdout
        for line in out.splitlines():
            fields = line.split()
            if fields[:2] == ["mod", "github.com/bojand/ghz"] and len(fields) > 2:
                return fields[2]
    out = subprocess.run([ghz, "--version"], capture_output=True, text=True)
    return (out.stdout + out.stderr).strip()


def ghz_cmd(ghz, addr, extra):
    return [ghz, "--insecure", "--proto", PROTO, "--call", "candor.bench.Bench.Echo", "-d", BODY,
            "--format", "json"] + extra + [addr]


def run_ghz(pin, ghz, addr, extra):
    before = child_cpu()
    out = subprocess.run(pin + ghz_cmd(ghz, addr, extra), capture_output=True, text=True)
    cpu = child_cpu() - before
    try:
        report = json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"ghz failed ({out.returncode}): {out.stderr[-2000:]}")
    ok = report.get("statusCodeDistribution", {}).get("OK", 0)
    return report, ok, cpu


def candor_cmd(addr, extra, path):
    return [CANDOR, "run", f"grpc://{addr}", "--proto", PROTO, "--call", "candor.bench.Bench/Echo",
            "--body", BODY, "-t", "1", "-c", "1", "--streams", "16", "--quiet", "--json", path] + extra


def candor_h2_cmd(addr, extra, path, body_file):
    return [CANDOR, "run", f"http://{addr}/candor.bench.Bench/Echo", "--h2", "-m", "POST",
            "-H", "content-type: application/grpc", "-H", "te: trailers", "--body-file", body_file,
            "-t", "1", "-c", "1", "--streams", "16", "--quiet", "--json", path] + extra


def framed_body(tmp):
    """BODY as protobuf (name = 1, seq = 2) with gRPC's 5-byte prefix, for candor-h2."""
    name = b"bench"
    message = bytes([0x0A, len(name)]) + name + bytes([0x10, 0x01])
    path = os.path.join(tmp, "body.bin")
    with open(path, "wb") as f:
        f.write(bytes([0]) + len(message).to_bytes(4, "big") + message)
    return path


def run_candor(pin, addr, extra, tmp, h2=False):
    path = os.path.join(tmp, "out.json")
    cmd = candor_h2_cmd(addr, extra, path, framed_body(tmp)) if h2 else candor_cmd(addr, extra, path)
    before = child_cpu()
    subprocess.run(pin + cmd, stdout=subprocess.DEVNULL, check=True)
    cpu = child_cpu() - before
    with open(path) as f:
        r = json.load(f)
    return r, r["requests"]["completed"], cpu


def ghz_per_second(report):
    """Calls answered in each whole second from the first call's start (the last partial second
    dropped)."""
    times = []
    for d in report.get("details", []):
        # RFC 3339 with nanoseconds: keep microseconds for fromisoformat.
        t = d["timestamp"]
        head, _, tail = t.partition(".")
        frac = "".join(c for c in tail if c.isdigit())
        zone = tail[len(frac):]
        stamp = datetime.datetime.fromisoformat(f"{head}.{frac[:6].ljust(6, '0')}{zone.replace('Z', '+00:00')}")
        times.append(stamp.timestamp() + d["latency"] / 1e9)
    if not times:
        return []
    t0 = min(times)
    seconds = int(max(times) - t0)
    counts = [0] * max(seconds, 1)
    for t in times:
        i = int(t - t0)
        if i < len(counts):
            counts[i] += 1
    return counts


def candor_per_second(r):
    return [i["completed"] + i["failed"] for i in r.get("intervals", [])
            if not i.get("warmup") and abs(i["length_s"] - 1.0) < 1e-6]


def spread(counts):
    if not counts:
        return "no whole seconds"
    return (f"min {min(counts)}  median {statistics.median(counts):.0f}  max {max(counts)}  "
            f"stdev {statistics.pstdev(counts):.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ghz", required=True, help="path of ghz v0.120.0 (built outside the project)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--rate-duration", type=int, default=10)
    ap.add_argument("--server-threads", type=int, default=1)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "candor"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "candor-grpc", "--features", "test-server",
                    "--bin", "candor-grpc-test-server"], cwd=ROOT, check=True)
    pinned = shutil.which("taskset") and (os.cpu_count() or 1) >= 2
    pin_s = ["taskset", "-c", "0"] if pinned else []
    pin_c = ["taskset", "-c", "1"] if pinned else []
    version = ghz_version(a.ghz)
    server, addr = start_server(pin_s, a.server_threads)
    tmp = tempfile.mkdtemp()
    per_cpu = {"ghz": [], "candor": [], "candor-h2": []}
    try:
        print(f"candor-grpc-test-server ({a.server_threads} thread) on CPU 0 at {addr}, clients on CPU 1; ghz {version}")
        print(f"\n1. closed loop, 16 calls in flight on one connection, {a.duration} s")
        print("   " + " ".join(ghz_cmd("ghz", addr, ["-c", "16", "--connections", "1", "-z", f"{a.duration}s"])))
        print("   " + " ".join(candor_cmd(addr, ["-R", "max", "-d", f"{a.duration}s"], "out.json")))
        print("   " + " ".join(candor_h2_cmd(addr, ["-R", "max", "-d", f"{a.duration}s"], "out.json", "body.bin")))
        tools = [
            ("ghz", lambda: run_ghz(pin_c, a.ghz, addr, ["-c", "16", "--connections", "1", "-z", f"{a.duration}s"])),
            ("candor", lambda: run_candor(pin_c, addr, ["-R", "max", "-d", f"{a.duration}s"], tmp)),
            ("candor-h2", lambda: run_candor(pin_c, addr, ["-R", "max", "-d", f"{a.duration}s"], tmp, h2=True)),
        ]
        for r in range(a.rounds):
            for name, run in (tools if r % 2 == 0 else list(reversed(tools))):
                _, n, cpu = run()
                per_cpu[name].append(n / cpu)
                print(f"   round {r + 1}  {name:9} {n:9d} calls ({n / a.duration:7.0f}/s)  {cpu:6.2f} CPU s  "
                      f"{n / cpu:10.0f} calls/CPU-s")
        base = statistics.median(per_cpu["ghz"])
        for name in per_cpu:
            m = statistics.median(per_cpu[name])
            print(f"   median {name:9} {m:10.0f} calls/CPU-s  {m / base:6.2f}x ghz")

        print(f"\n2. fixed rate {a.rate}/s for {a.rate_duration} s")
        ghz_rate = ["--rps", str(a.rate), "-c", "10", "-z", f"{a.rate_duration}s"]
        candor_rate = ["-R", str(a.rate), "-d", f"{a.rate_duration}s"]
        print("   " + " ".join(ghz_cmd("ghz", addr, ghz_rate)))
        print("   " + " ".join(candor_cmd(addr, candor_rate, "out.json")))
        for r in range(a.rounds):
            report, n, cpu = run_ghz(pin_c, a.ghz, addr, ghz_rate)
            counts = ghz_per_second(report)
            print(f"   round {r + 1}  ghz     {n / a.rate_duration:8.1f}/s achieved  per second: {spread(counts)}  "
                  f"CPU {cpu:.2f} s")
            res, n, cpu = run_candor(pin_c, addr, candor_rate, tmp)
            counts = candor_per_second(res)
            print(f"   round {r + 1}  candor  {res['rate']['achieved_per_s']:8.1f}/s achieved  per second: {spread(counts)}  "
                  f"CPU {cpu:.2f} s")
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
