#!/usr/bin/env python3
"""The open loop at its limits: the figures of the "open loop at the physical limit" table.

One `candor serve` thread pinned to core 1, one candor client pinned to core 0 (two threads for
the 10,000-connection case, which shares both cores). CPU = user + system time of the client
process (getrusage of the child); resident memory = the client's VmRSS, read from /proc while it
runs. Every figure is a median over ROUNDS interleaved rounds.

  closed        `-R max -t1 -c64`: requests per second and CPU microseconds per request
  ceiling       the highest open-loop rate, as a share of that round's closed-loop rate (steps of
                10%), whose send lag p99 stays <= 50 us with >= 99% of the target achieved;
                `--ceiling-connections N` gives those runs N connections instead of 64, so that
                a server's millisecond hiccup does not take every connection; each step's send
                lag p99 is printed as it is measured
  paced         `-R 20000 -t1 -c64` (`--paced-rate`), default pacing and `--spin 0`: CPU
                us/request, its ratio to the closed-loop CPU us/request, send lag p50 and p99, and
                the share of the thread's time pacing spent spinning (when the results say)
  pool          `-R 10000 -t2 -c10000`, no warm-up: response and send lag p99, generator_late,
                peak resident memory
  --memory S    additionally `-R 20000 -t1 -c64` for S seconds, resident memory every 10 s

  bench/open_loop.py [--rounds 3] [--duration 8] [--memory 600] [--candor PATH] [--skip pool]
                     [--paced-rate 20000] [--against PATH] [--ceiling-connections 64]
                     [--busy-server]

--against PATH runs a second build (e.g. one of main) in the same rounds, each case of a round
once with each build in turn, so that the machine's noise hits both; it prints both builds'
medians and the ratios of this build's to the other's.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_client(cmd, sample_every=None):
    """Runs a candor client; returns (results json, cpu seconds, peak RSS KiB, RSS series)."""
    before = child_cpu()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak, series, started, next_sample = 0, [], time.monotonic(), 0.0
    while p.poll() is None:
        rss = rss_kib(p.pid)
        peak = max(peak, rss)
        elapsed = time.monotonic() - started
        if sample_every and elapsed >= next_sample:
            series.append((round(elapsed), rss))
            next_sample += sample_every
        time.sleep(0.05)
    err = p.stderr.read()
    if p.returncode not in (0, 3):
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err}")
    return child_cpu() - before, peak, series


def load(path):
    with open(path) as f:
        return json.load(f)


def p99_us(res, measure):
    rows = res[measure]["percentiles"]
    return next(r["value_ns"] for r in rows if r["percentile"] == 99.0) / 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--memory", type=int, default=0, help="seconds of the flat-memory run (0: skip)")
    ap.add_argument("--candor", default=os.path.join(ROOT, "target", "release", "candor"))
    ap.add_argument("--skip", action="append", default=[], choices=["ceiling", "paced", "pool"])
    ap.add_argument("--paced-rate", type=int, default=20000, help="rate of the paced case")
    ap.add_argument("--ceiling-connections", type=int, default=64,
                    help="connections of the ceiling's open-loop runs (the closed loop keeps 64)")
    ap.add_argument("--against", help="another candor build to run in the same rounds")
    ap.add_argument("--busy-server", action="store_true",
                    help="run the server with --busy-poll: it never sleeps, so no send pays for waking it")
    a = ap.parse_args()
    if a.candor == os.path.join(ROOT, "target", "release", "candor"):
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "candor"], cwd=ROOT, check=True)
    pinned = (os.cpu_count() or 1) >= 2 and shutil.which("taskset")
    pin_server = ["taskset", "-c", "1"] if pinned else []
    pin_client = ["taskset", "-c", "0"] if pinned else []
    if a.busy_server and not pinned:
        sys.exit("--busy-server needs two cores and taskset: a server that never sleeps would starve a client on its core")
    builds = [a.candor] + ([a.against] if a.against else [])
    busy = ["--busy-poll"] if a.busy_server else []
    server = subprocess.Popen(pin_server + [a.candor, "serve", "--listen", "127.0.0.1:0"] + busy, stdout=subprocess.PIPE, text=True)
    url = next(w for w in server.stdout.readline().split() if w.startswith("http://")).rstrip(",") + "/"
    tmp = tempfile.mkdtemp()
    out = os.path.join(tmp, "r.json")
    d = f"{a.duration}s"
    all_rows = {b: {k: [] for k in ("closed", "ceiling", "paced", "paced spin0", "pool")} for b in builds}
    series = []
    load_before = os.getloadavg()
    try:
        for r in range(a.rounds):
            for build in builds:
                measure_round(a, build, all_rows[build], pin_client, url, out, d)
            print(f"round {r + 1}/{a.rounds} done", flush=True)
        if a.memory:
            _, _, _, series = client(a.candor, pin_client, url, out, ["-R", "20000", "-t1", "-c64", "-d", f"{a.memory}s"], sample_every=10)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    medians = {b: report(a, b, all_rows[b], pinned) for b in builds}
    print(f"\nload average before / after: {load_before} / {os.getloadavg()}")
    if a.against:
        mine, other = medians[a.candor], medians[a.against]
        print(f"\nratios, {a.candor} / {a.against} (medians):")
        for k in mine:
            if k in other and other[k]:
                print(f"  {k}: {mine[k] / other[k]:.2f}")
    if series:
        print("resident memory at 20,000/s (seconds, MiB): " + ", ".join(f"{t}:{kib / 1024:.1f}" for t, kib in series))


def client(build, pin, url, out, args, sample_every=None):
    cmd = pin + [build, "run", "-q", "--json", out] + args + [url]
    cpu, peak, series = run_client(cmd, sample_every)
    return load(out), cpu, peak, series


def measure_round(a, build, rows, pin_client, url, out, d):
    """One round of every case with `build`."""
    res, cpu, _, _ = client(build, pin_client, url, out, ["-R", "max", "-t1", "-c64", "-d", d])
    closed_rate = res["requests"]["completed"] / a.duration
    closed_us = cpu / res["requests"]["completed"] * 1e6
    rows["closed"].append((closed_rate, closed_us))
    if "ceiling" not in a.skip:
        held = 0.0
        steps = []
        for share in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
            rate = int(closed_rate * share)
            res, _, _, _ = client(build, pin_client, url, out,
                                  ["-R", str(rate), "-t1", f"-c{a.ceiling_connections}", "-d", d])
            achieved = res["requests"]["completed"] / a.duration / rate
            lag = p99_us(res, "send_lag")
            steps.append(f"{share:.0%} send lag p99 {lag:,.0f} us, achieved {achieved:.1%}")
            if lag <= 50.0 and achieved >= 0.99:
                held = share
            else:
                break
        print(f"  ceiling steps ({os.path.basename(build)}): " + "; ".join(steps), flush=True)
        rows["ceiling"].append((held, held * closed_rate))
    if "paced" not in a.skip:
        for name, extra in (("paced", []), ("paced spin0", ["--spin", "0us"])):
            res, cpu, _, _ = client(build, pin_client, url, out, ["-R", str(a.paced_rate), "-t1", "-c64", "-d", d] + extra)
            us = cpu / max(res["requests"]["completed"], 1) * 1e6
            spin = (res.get("pacing") or {}).get("spin_share", float("nan"))
            p50 = next(r["value_ns"] for r in res["send_lag"]["percentiles"] if r["percentile"] == 50.0) / 1000.0
            rows[name].append((us, us / closed_us, p99_us(res, "send_lag"), spin, p50))
    if "pool" not in a.skip:
        res, cpu, peak, _ = client(build, [], url, out, ["-R", "10000", "-t2", "-c10000", "-d", d])
        req = res["requests"]
        pool = res.get("pool") or {}
        connect_p99 = next((r["value_ns"] / 1000.0 for r in pool["connect_time"]["percentiles"]
                            if r["percentile"] == 99.0), float("nan")) if pool else float("nan")
        rows["pool"].append((p99_us(res, "response_time"), p99_us(res, "send_lag"),
                             req["generator_late"], req["intended"], peak / 1024.0,
                             req["completed"] / a.duration,
                             pool.get("open_s", float("nan")) * 1000.0, connect_p99,
                             pool.get("ready", float("nan"))))


def report(a, build, rows, pinned):
    """Prints the medians of `build`'s rounds; returns the ones ratios are taken of."""
    med = lambda xs: statistics.median(xs)
    out = {}
    print(f"\n{build}; server `candor serve` 1 thread{' (--busy-poll)' if a.busy_server else ''}{' on core 1, client on core 0' if pinned else ''}; "
          f"{a.rounds} rounds of {a.duration}s; medians")
    rate, us = med(x[0] for x in rows["closed"]), med(x[1] for x in rows["closed"])
    print(f"closed loop, 1 thread, 64 connections: {rate:,.0f} requests/s, {us:.2f} CPU us/request")
    out["closed-loop CPU us/request"] = us
    if rows["ceiling"]:
        print(f"open-loop ceiling (send lag p99 <= 50 us, {a.ceiling_connections} connections): {med(x[0] for x in rows['ceiling']):.0%} "
              f"of closed loop = {med(x[1] for x in rows['ceiling']):,.0f}/s")
    for name in ("paced", "paced spin0"):
        if rows[name]:
            print(f"{a.paced_rate:,}/s {'default pacing' if name == 'paced' else '--spin 0'}: "
                  f"{med(x[0] for x in rows[name]):.1f} CPU us/request = {med(x[1] for x in rows[name]):.2f}x closed loop, "
                  f"send lag p50 {med(x[4] for x in rows[name]):.1f} us, p99 {med(x[2] for x in rows[name]):.1f} us, "
                  f"spinning {med(x[3] for x in rows[name]):.1%} of the thread's time (pacing; nan = not reported)")
            out[f"{name} CPU us/request"] = med(x[0] for x in rows[name])
            out[f"{name} CPU x closed loop"] = med(x[1] for x in rows[name])
    if rows["pool"]:
        p = rows["pool"]
        print(f"10,000 connections at 10,000/s, 2 threads, no warm-up: response p99 {med(x[0] for x in p):,.0f} us, "
              f"send lag p99 {med(x[1] for x in p):,.0f} us, generator_late {med(x[2] for x in p):,.0f} of "
              f"{med(x[3] for x in p):,.0f}, peak RSS {med(x[4] for x in p):,.0f} MiB, achieved {med(x[5] for x in p):,.0f}/s; "
              f"pool of {med(x[8] for x in p):,.0f} ready in {med(x[6] for x in p):,.1f} ms, connect p99 {med(x[7] for x in p):,.0f} us "
              f"(nan = not reported)")
    return out


if __name__ == "__main__":
    main()
