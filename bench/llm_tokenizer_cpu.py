#!/usr/bin/env python3
"""CPU per request of an `--llm` run at 100 req/s with `--tokenizer cl100k_base` against the same
run without it, and against a build from before the tokenizer landed (issue 40: within 10%).

Starts `candor serve --llm --ttft 5ms --itl 1ms --output-tokens 20` pinned to cpu 1 and runs,
pinned to cpu 0, `candor run --llm openai -R 100 -c 16 -t 1 --prompt-tokens 128 -d D` for each
case, in alternating order over --rounds rounds, at two lengths (--short and --long seconds).
Per run: user + system CPU of the candor process (wait4) and its completed requests. Printed:
  * whole run: CPU / completed of the long run (start-up included: loading an embedded encoding
    and tokenizing the prompts once happen before the first send);
  * marginal: (CPU long - CPU short) / (completed long - completed short), the cost of one more
    request in steady state, with the start-up cancelled out;
each as the median over rounds, and the ratios to the run without a tokenizer.

Usage: bench/llm_tokenizer_cpu.py [--candor target/release/candor] [--baseline OLD_CANDOR]
       [--rounds 3] [--short 4] [--long 16]
"""
import argparse, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(binary, url, secs, extra, out):
    cmd = ["taskset", "-c", "0", binary, "run", "--llm", "openai", "-R", "100", "-c", "16", "-t", "1",
           "--prompt-tokens", "128", "--output-tokens", "20", "-d", f"{secs}s", "-T", "2s",
           "--drain", "2s", "-q", "--json", out, *extra, url]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err.strip()[-1000:]}")
    return ru.ru_utime + ru.ru_stime, json.load(open(out))["requests"]["completed"], cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candor", default=os.path.join(ROOT, "target", "release", "candor"))
    ap.add_argument("--baseline", help="a candor built before --tokenizer existed (optional)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--short", type=int, default=4)
    ap.add_argument("--long", type=int, default=16)
    a = ap.parse_args()
    cases = {"no tokenizer": (a.candor, []), "--tokenizer cl100k_base": (a.candor, ["--tokenizer", "cl100k_base"])}
    if a.baseline:
        cases["pre-tokenizer build"] = (a.baseline, [])
    server = subprocess.Popen(["taskset", "-c", "1", a.candor, "serve", "--llm", "--listen", "127.0.0.1:0",
                               "--ttft", "5ms", "--itl", "1ms", "--output-tokens", "20"],
                              stdout=subprocess.PIPE, text=True)
    url = next((w.rstrip(",") for w in server.stdout.readline().split() if "://" in w), None)
    whole, marginal, cmds = {k: [] for k in cases}, {k: [] for k in cases}, {}
    try:
        with tempfile.TemporaryDirectory() as d:
            for rnd in range(a.rounds):
                names = list(cases) if rnd % 2 == 0 else list(cases)[::-1]
                for name in names:
                    binary, extra = cases[name]
                    cs, ns, _ = run(binary, url, a.short, extra, os.path.join(d, "s.json"))
                    cl, nl, cmd = run(binary, url, a.long, extra, os.path.join(d, "l.json"))
                    cmds[name] = " ".join(cmd[3:]).replace(d, "TMP").replace(url, "URL")
                    whole[name].append(cl / nl * 1e6)
                    marginal[name].append((cl - cs) / (nl - ns) * 1e6)
                    print(f"round {rnd + 1} {name}: {nl} requests, {cl * 1e3:.0f} ms CPU ({whole[name][-1]:.0f} µs/request); "
                          f"{a.short} s: {ns} requests, {cs * 1e3:.0f} ms; marginal {marginal[name][-1]:.0f} µs/request",
                          flush=True)
    finally:
        server.terminate()
        server.wait()
    med = lambda xs: sorted(xs)[len(xs) // 2]
    base_w, base_m = med(whole["no tokenizer"]), med(marginal["no tokenizer"])
    print(f"\n| case | CPU µs/request, whole {a.long} s run (rounds) | median | ratio | marginal µs/request (rounds) | median | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name in cases:
        w, m = whole[name], marginal[name]
        print(f"| {name} | {' / '.join(f'{x:.0f}' for x in w)} | {med(w):.0f} | {med(w) / base_w:.3f} | "
              f"{' / '.join(f'{x:.0f}' for x in m)} | {med(m):.0f} | {med(m) / base_m:.3f} |")
    for name, c in cmds.items():
        print(f"  {name}: {c}")


if __name__ == "__main__":
    main()
