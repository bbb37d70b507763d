#!/usr/bin/env python3
"""False alarms and power of `candor compare` on real runs (issue 23).

A/A: the same server, configuration and machine, PAIRS pairs of `candor run --repeat N` runs, each
pair compared; counts the verdicts other than `same` at p50, p90 and p99 (`not enough samples` is
counted apart: it is no alarm, but no `same` either).
A/B: the same against a second server whose fixed service time is 10% longer (`candor serve
--delay`), the order of A and B alternating from pair to pair; counts `slower` at p50.

The servers are pinned to one core and candor to the other (taskset), as the other bench scripts
do. Usage:

  bench/false_alarms.py [--pairs 20] [--repeat 3] [--duration 2s] [--rate 5000] [--connections 16]
                        [--delay-us 1000] [--slower-pct 10] [--pause 200ms] [--no-pin]
                        [--interleave]

With --interleave the runs of the two sides alternate (single runs, merged per side with
`candor merge --as-repeats`), so that the machine's drift falls on both sides.

Prints both tables as Markdown, with the command that made them, for docs/statistics.md.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import REL, start  # noqa: E402

CANDOR = os.path.join(REL, "candor")
PERCENTILES = [50.0, 90.0, 99.0]


def run_repeats(pin, url, path, a):
    cmd = pin + [
        CANDOR, "run", "-q", "-R", str(a.rate), "-c", str(a.connections), "-d", a.duration,
        "--repeat", str(a.repeat), "--repeat-pause", a.pause, "--json", path, url,
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_one(pin, url, path, a):
    cmd = pin + [
        CANDOR, "run", "-q", "-R", str(a.rate), "-c", str(a.connections), "-d", a.duration,
        "--json", path, url,
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def interleaved(pin, sides, a, tmp, tag):
    """`--interleave`: the runs of both sides alternate (x1 y1 x2 y2 ...), each a single run,
    and each side's runs are merged with `candor merge --as-repeats`: drift of the machine then
    falls on both sides alike."""
    parts = {path: [] for _, path in sides}
    for k in range(a.repeat):
        for url, path in sides:
            one = os.path.join(tmp, f"{tag}-{os.path.basename(path)}-{k}.json")
            run_one(pin, url, one, a)
            parts[path].append(one)
    for path, runs in parts.items():
        subprocess.run([CANDOR, "merge", "--as-repeats", "-o", path] + runs, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def compare(base, cand, out):
    subprocess.run(
        [CANDOR, "compare", base, cand, "--json", out],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    with open(out) as f:
        rows = json.load(f)["comparisons"][0]["rows"]
    return {r["percentile"]: (r["verdict"], r["rule"], r.get("ratio")) for r in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--duration", default="2s")
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--delay-us", type=int, default=1000)
    ap.add_argument("--slower-pct", type=float, default=10.0)
    ap.add_argument("--pause", default="200ms")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--interleave", action="store_true",
                    help="alternate single runs of the two sides and merge each side's with "
                         "`candor merge --as-repeats`, instead of `--repeat N` blocks")
    a = ap.parse_args()
    if not os.path.exists(CANDOR):
        sys.exit("build first: cargo build --release -p candor-cli")
    pin_srv, pin_cli = ([], [])
    if not a.no_pin and shutil.which("taskset"):
        pin_srv, pin_cli = (["taskset", "-c", "0"], ["taskset", "-c", "1"])
    slow_us = round(a.delay_us * (1 + a.slower_pct / 100))
    srv_a, url_a = start([CANDOR, "serve", "--listen", "127.0.0.1:0", "--delay", f"{a.delay_us}us"], pin_srv)
    srv_b, url_b = start([CANDOR, "serve", "--listen", "127.0.0.1:0", "--delay", f"{slow_us}us"], pin_srv)
    tmp = tempfile.mkdtemp(prefix="candor-false-alarms-")
    aa = {p: {"same": 0, "alarm": 0, "samples": 0} for p in PERCENTILES}
    ab = {"slower": 0, "same": 0, "other": 0, "ratios": []}
    try:
        for i in range(a.pairs):
            x, y, c = (os.path.join(tmp, f"aa{i}{s}.json") for s in "xyc")
            if a.interleave:
                interleaved(pin_cli, [(url_a, x), (url_a, y)], a, tmp, f"aa{i}")
            else:
                run_repeats(pin_cli, url_a, x, a)
                run_repeats(pin_cli, url_a, y, a)
            v = compare(x, y, c)
            for p in PERCENTILES:
                verdict = v[p][0]
                key = "same" if verdict == "same" else (
                    "samples" if verdict == "not enough samples" else "alarm")
                aa[p][key] += 1
            base, cand = (os.path.join(tmp, f"ab{i}{s}.json") for s in "ab")
            order = [(url_a, base), (url_b, cand)]
            order = order if i % 2 == 0 else order[::-1]
            if a.interleave:
                interleaved(pin_cli, order, a, tmp, f"ab{i}")
            else:
                for url, path in order:
                    run_repeats(pin_cli, url, path, a)
            v = compare(base, cand, os.path.join(tmp, f"ab{i}c.json"))
            verdict, _, ratio = v[50.0]
            ab["slower" if verdict == "slower" else "same" if verdict == "same" else "other"] += 1
            ab["ratios"].append(ratio)
            print(f"pair {i + 1}/{a.pairs}: A/A {compare_line(c)}; A/B p50 {verdict} ({fmt(ratio)})",
                  file=sys.stderr, flush=True)
    finally:
        srv_a.kill()
        srv_b.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    cmd = "bench/false_alarms.py " + " ".join(sys.argv[1:])
    how = (f"{a.repeat} single runs a side interleaved, merged with `candor merge --as-repeats`"
           if a.interleave else f"`--repeat {a.repeat} --repeat-pause {a.pause}` blocks")
    print(f"`{cmd.strip()}` ({a.pairs} pairs of `candor run -R {a.rate} -c {a.connections} "
          f"-d {a.duration}`, {how}, servers `candor serve "
          f"--delay {a.delay_us}us` and `--delay {slow_us}us`{'' if pin_cli else ', unpinned'})\n")
    print("A/A (the same server twice): verdicts other than `same`\n")
    print("| percentile | same | not same (false alarms) | not enough samples |")
    print("|---|---|---|---|")
    for p in PERCENTILES:
        r = aa[p]
        print(f"| p{p:g} | {r['same']} | {r['alarm']} of {a.pairs} | {r['samples']} |")
    ratios = sorted(x for x in ab["ratios"] if x is not None)  # None: a run without samples
    med = ratios[len(ratios) // 2] if ratios else float("nan")
    print(f"\nA/B (service time +{a.slower_pct:g}%): p50 verdicts\n")
    print("| slower | same | other | median p50 ratio |")
    print("|---|---|---|---|")
    print(f"| {ab['slower']} of {a.pairs} | {ab['same']} | {ab['other']} | {med:.3f} |")


def fmt(x):
    return "-" if x is None else f"{x:.3f}"


def compare_line(c):
    with open(c) as f:
        rows = json.load(f)["comparisons"][0]["rows"]
    return ", ".join(f"p{r['percentile']:g} {r['verdict']} ({fmt(r['ratio'])})"
                     for r in rows if r["percentile"] in PERCENTILES)


if __name__ == "__main__":
    main()
