#!/usr/bin/env python3
"""CPU cost per request of candor next to wrk, side by side in the same run.

Starts one fast local server (`candor serve`, pinned to one core), then alternates runs of wrk and
candor (pinned to the other core) and measures each client's CPU time (user + system, from
getrusage of the child) and its completed requests:

  * closed loop: `wrk -t1 -cC -dD` vs `candor run -R max -t1 -cC -dD`  -> requests per CPU-second
  * open loop at a fixed rate: `candor run -R RATE -t1 -cC -dD`, with default pacing and with
    `--spin 0` (never spins)                                       -> CPU microseconds per request
  * with --wrk2 PATH, the same open loop by wrk2 (`wrk2 -t1 -cC -dD -R RATE`), which paces to a
    millisecond: the peer's price of an open loop, beside candor's

The machine is small and noisy, so every configuration runs ROUNDS times, interleaved, and the
summary quotes medians and the candor/wrk ratio. Usage:

  bench/compare_wrk.py [--rounds 3] [--duration 10] [--connections 50] [--rate 20000]
                      [--baseline PATH/TO/OLDER/candor] [--wrk2 PATH/TO/wrk2] [--closed-only]
                      [--busy-server]

wrk2 is not packaged by Debian: build it yourself from its sources (github.com/giltene/wrk2,
`make`) outside this repository and pass the binary's path.

With --baseline, an older candor binary (for example one built from the commit before a change)
runs the same three candor configurations in the same rounds, and the summary adds the
new/baseline ratio of CPU per request: the before/after figure of a change, measured side by side.
"""

import argparse
import json
import os
import re
import resource
import shutil
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


def measured(cmd):
    """Runs cmd, returns (stdout, cpu seconds of that child)."""
    before = child_cpu()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.stdout, child_cpu() - before


def wrk_requests(text):
    m = re.search(r"(\d+) requests in", text)
    if not m:
        sys.exit("cannot read wrk output:\n" + text)
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--rate", type=int, default=20000)
    ap.add_argument("--baseline", help="an older candor binary to run beside this one")
    ap.add_argument("--wrk2", help="a wrk2 binary, to run its open loop at --rate beside candor's")
    ap.add_argument("--closed-only", action="store_true", help="only the closed-loop runs (wrk, candor, baseline)")
    ap.add_argument("--busy-server", action="store_true",
                    help="run the server with --busy-poll: it never sleeps, so no send pays for waking it")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install -y wrk")
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "candor"], cwd=ROOT, check=True)
    cores = os.cpu_count() or 1
    pin_server = ["taskset", "-c", "1"] if cores >= 2 and shutil.which("taskset") else []
    pin_client = ["taskset", "-c", "0"] if pin_server else []
    if a.busy_server and not pin_server:
        sys.exit("--busy-server needs two cores and taskset: a server that never sleeps would starve a client on its core")
    busy = ["--busy-poll"] if a.busy_server else []
    server = subprocess.Popen(pin_server + [CANDOR, "serve", "--listen", "127.0.0.1:0"] + busy, stdout=subprocess.PIPE, text=True)
    url = next(w for w in server.stdout.readline().split() if w.startswith("http://")).rstrip(",") + "/"
    d, c = str(a.duration), str(a.connections)
    rows = {"wrk closed": [], "candor closed": []}
    if not a.closed_only:
        rows.update({"candor open": [], "candor open spin0": []})
    if a.wrk2 and not a.closed_only:
        rows["wrk2 open"] = []
    binaries = [("candor", CANDOR)]
    if a.baseline:
        binaries.append(("baseline", os.path.abspath(a.baseline)))
        rows.update({"baseline closed": []} if a.closed_only else
                    {"baseline closed": [], "baseline open": [], "baseline open spin0": []})
    # Per candor run: (seconds spent spinning before sends, timer wake-ups, socket wake-ups), from
    # the results' `pacing`: an open loop's CPU is work plus spinning, and the two move apart.
    spin = {}
    tmp = tempfile.mkdtemp()
    try:
        for r in range(a.rounds):
            text, cpu = measured(pin_client + ["wrk", "-t1", "-c" + c, "-d" + d + "s", url])
            rows["wrk closed"].append((wrk_requests(text), cpu))
            if a.wrk2 and not a.closed_only:
                text, cpu = measured(pin_client + [a.wrk2, "-t1", "-c" + c, "-d" + d + "s", "-R" + str(a.rate), url])
                rows["wrk2 open"].append((wrk_requests(text), cpu))
            # The two builds take turns going first in each configuration, round by round: the
            # run right after another (the closed loop's 4 s at full CPU) pays for what that one
            # left behind (sockets in TIME_WAIT, a warm or cold cache), so a fixed order biases
            # the ratio.
            order = binaries if r % 2 == 0 else binaries[::-1]
            for (who, binary), (kind, rate, extra) in (
                (b, k)
                for k in (("closed", "max", []), ("open", str(a.rate), []), ("open spin0", str(a.rate), ["--spin", "0us"]))[:1 if a.closed_only else 3]
                for b in order
            ):
                name = f"{who} {kind}"
                path = os.path.join(tmp, "r.json")
                cmd = [binary, "run", "-q", "-R", rate, "-t1", "-c", c, "-d", d + "s", "--json", path] + extra + [url]
                _, cpu = measured(pin_client + cmd)
                with open(path) as f:
                    res = json.load(f)
                rows[name].append((res["requests"]["completed"], cpu))
                pacing = res.get("pacing") or {}
                spin.setdefault(name, []).append((pacing.get("spin_s", 0.0), pacing.get("wakeups", 0),
                                                  pacing.get("socket_wakeups", 0)))
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(f"{k} {v[-1][0]} req {v[-1][1]:.2f} cpu-s" for k, v in rows.items()), flush=True)
            time.sleep(1)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    def per_cpu(name):
        return statistics.median(n / cpu for n, cpu in rows[name])

    def us_per_req(name):
        return statistics.median(cpu / n * 1e6 for n, cpu in rows[name])

    print()
    print(f"server: candor serve (1 thread{', pinned to core 1' if pin_server else ''}); clients pinned to core 0; "
          f"{a.rounds} interleaved rounds of {a.duration}s, {a.connections} connections, 1 thread; medians")
    print(f"{'client':<34} {'requests/s':>12} {'req per CPU-s':>14} {'CPU us/req':>11}")
    for name in rows:
        rps = statistics.median(n for n, _ in rows[name]) / a.duration
        who, _, kind = name.partition(" ")
        label = {"open": f"{who} open loop {a.rate}/s", "open spin0": f"{who} open loop {a.rate}/s --spin 0"}.get(kind, name)
        print(f"{label:<34} {rps:>12,.0f} {per_cpu(name):>14,.0f} {us_per_req(name):>11.2f}")
    ratio = us_per_req("candor closed") / us_per_req("wrk closed")
    print(f"\ncandor/wrk CPU per request, closed loop: {ratio:.2f} (below 1 = candor is cheaper); "
          f"requests per CPU-second, candor/wrk: {per_cpu('candor closed') / per_cpu('wrk closed'):.3f}")
    print("candor/wrk requests per CPU-second, round by round: " + ", ".join(
        f"{(n / cpu) / (wn / wcpu):.3f}" for (n, cpu), (wn, wcpu) in zip(rows["candor closed"], rows["wrk closed"])))
    if a.closed_only:
        if a.baseline:
            print(f"baseline/wrk requests per CPU-second: {per_cpu('baseline closed') / per_cpu('wrk closed'):.3f}")
        return
    for kind in ("open", "open spin0"):
        print(f"candor {kind} / candor closed, CPU per request: "
              f"{us_per_req('candor ' + kind) / us_per_req('candor closed'):.2f}")
    if a.wrk2:
        print(f"wrk2 open / wrk closed, CPU per request: {us_per_req('wrk2 open') / us_per_req('wrk closed'):.2f}")
        for kind in ("open", "open spin0"):
            print(f"candor {kind} / wrk2 open, CPU per request: "
                  f"{us_per_req('candor ' + kind) / us_per_req('wrk2 open'):.2f} (below 1 = candor is cheaper)")
    print("\nopen loop pacing, per round (spin CPU-s / timer wake-ups / socket wake-ups):")
    for name in ("candor open", "baseline open"):
        if name in spin:
            print(f"  {name:<16} " + ", ".join(f"{s:.2f}/{w}/{k}" for s, w, k in spin[name]))
    for kind in ("open", "open spin0"):
        for who in ("candor", "baseline"):
            name = f"{who} {kind}"
            if name in spin:
                work = statistics.median((cpu - s[0]) / n * 1e6 for (n, cpu), s in zip(rows[name], spin[name]))
                print(f"  {name:<22} CPU us/req without spinning: {work:.2f}")
    if a.baseline:
        for kind in ("closed", "open", "open spin0")[:1 if a.closed_only else 3]:
            per_round = [(c / n) / (bc / bn) for (n, c), (bn, bc) in zip(rows[f"candor {kind}"], rows[f"baseline {kind}"])]
            print(f"candor/baseline CPU per request, {kind}, round by round: " + ", ".join(f"{x:.3f}" for x in per_round)
                  + f" (median {statistics.median(per_round):.3f})")
        for kind in ("closed", "open", "open spin0"):
            change = us_per_req(f"candor {kind}") / us_per_req(f"baseline {kind}")
            print(f"candor/baseline CPU per request, {kind}: {change:.3f} (below 1 = the new build is cheaper)")


if __name__ == "__main__":
    main()
