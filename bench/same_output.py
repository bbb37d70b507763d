#!/usr/bin/env python3
"""Same output before and after a change: runs the same candor commands with two binaries and
compares what they write, one line per case (`same`, or what differs); exits 1 if anything does.

    bench/same_output.py --baseline OLD_CANDOR --new NEW_CANDOR [--only NAME,...] [--keep DIR]

Each binary runs against servers of its own (`candor serve` started by that binary on a port it
chose, 127.0.0.1 only); HTTP/2, HTTPS and raw TCP use candor-load's examples (h2_server,
tls_server, echo_server from target/release/examples, built if missing), started once and shared.

What is compared (a run's timing can never match, so only what does not depend on it):
- JSON files: every key path in order with its value type (so a key added, removed, moved or
  changed from integer to float shows), and every value that does not depend on timing: version
  fields, kind and mode, the config, the command line and target (ports and temporary paths
  masked), request names, stage definitions, status-code keys, percentile levels, and the counts
  of runs whose counts are fixed (`-n`, constant-arrival open loops without faults).
- `.hlog` files: header lines with numbers and dates masked, and the tags of the data lines.
- HTML files: the section ids, in order.
- Text reports: every line with numbers (and their units) masked and runs of spaces collapsed;
  lines that appear only when the machine was slow (send-lag and generator-late warnings) are
  left out.
- Bad input: stderr and the exit code exactly (paths and ports masked).
- Commands that read results (`merge`, `report`, `compare`, `correct`), given the same files
  (written once by the baseline at the start): everything they write and print, byte for byte
  (paths masked).
A case that differs is run again (--retries) and reported only if it differs every time.
"""

import argparse
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "target", "release", "examples")
RUN_TIMEOUT_S = 60

# Report lines whose presence depends on how busy the machine was, not on the code.
TIMING_LINES = re.compile(
    r"^WARNING: (run \d+: )?(send lag|the generator itself|candor could not keep up|the target could not keep up)"
    r"|^\s*pacing:|^\s*stationarity:|^candor serve:|^\s*\d+(\.\d+)?[a-zµ]*s? elapsed"
    # The shape of a short run's service-time curve is the machine's.
    r"|^VERDICT: coordinated-omission signature"
)
CI_ROWS = re.compile(r"^\s*response-time percentiles with|^\s*p[\d.]+\s+\S+\s+\S+ \.\. "
                     r"|^\s*unfinished ages:|^WARNING: \d+ requests? (was|were) unfinished")
NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?(ns|us|µs|ms|s|m|h|k|M)?(?![A-Za-z])")


class Servers:
    """Processes started for one side or for both; stopped by their own pids."""

    def __init__(self):
        self.procs = []

    def start(self, cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.procs.append(p)
        line = p.stdout.readline()
        url = next((w.rstrip(",") for w in line.split() if "://" in w), None)
        if url is None:
            raise RuntimeError(f"no URL in the banner of {cmd}: {line!r}")
        return url, p.pid

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs.clear()


class Side:
    """One binary's view of a case: its own temporary directory and its own `candor serve`s."""

    def __init__(self, binary, work, shared):
        self.bin = binary
        self.dir = work
        self.shared = shared
        self.servers = Servers()
        self.pids = set()

    def serve(self, *args):
        return self.serve_pid(*args)[0]

    def serve_pid(self, *args):
        """A `candor serve` of this side's binary: its URL and process id."""
        url, pid = self.servers.start([self.bin, "serve", "--listen", "127.0.0.1:0", *args])
        self.pids.add(str(pid))
        return url, pid

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def run(self, *args):
        """Runs `candor ARGS`; returns (exit code, stdout, stderr)."""
        p = subprocess.run([self.bin, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                           cwd=self.dir)
        return p.returncode, p.stdout, p.stderr

    def mask(self, text):
        if text.strip() in self.pids:
            return "<PID>"
        # The shared inputs carry the baseline's path in their command lines.
        text = text.replace(self.dir, "<DIR>").replace(self.bin, "<BIN>")
        text = text.replace(self.shared.baseline, "<BIN>")
        for ca in (self.shared.ca, self.shared.h2_ca):
            if ca:
                text = text.replace(ca, "<CA>")
        return re.sub(r"(127\.0\.0\.1|localhost):\d+", r"\1:<PORT>", text)


# ---- what is compared ---------------------------------------------------------------------------

def json_type(v):
    return {dict: "object", list: "array", str: "string", bool: "bool", int: "int",
            float: "float", type(None): "null"}[type(v)]


# Values compared in every JSON file (paths with array indices written []).
ALWAYS = re.compile(
    r"^(schema_version|candor_version|kind|mode|target|command_line\[\]|config\..*|environment\..*"
    r"|.*\.percentiles\[\]\.percentile|.*stages\[\]\.(from|to|rate|duration|start|kind|name|index)[a-z_]*"
    r"|.*\.label|.*\.labels\[\]|.*\.measure|.*\.rates\[\]|.*rate_per_s|.*target_per_s|stop_reason)$"
)
# Never compared as values: wall-clock instants and what one second of a run saw.
TIMED = re.compile(r"start_time|_unix_s|intervals\[\]|generator_late|send_lag_p|start_offset|reference"
                   r"|interrupted_after")
# Bounds that are null when a run has too few samples for them (a closed loop's count is timing).
NULLABLE = re.compile(r"confidence\[\]\.(upper|lower)_ns$|highest_supported_percentile$")
# Arrays whose elements appear only when the machine was slow: their type is compared, not what
# they hold.
TIMED_ARRAYS = re.compile(r"(^|\.)(warnings|behind|notes|problems)$")
# Values compared in runs whose counts are fixed.
COUNTS = re.compile(
    r"^(.*\.)?requests\.(intended|completed|failed|in_flight_at_end|sent_unanswered|queued_unsent"
    r"|bytes_written|bytes_read|errors\..*|status\..*|codes\..*)$|^(.*\.)?response_time\.count$"
    r"|^(.*\.)?status_codes\..*$"
)


def flatten(v, path, out, counts, masker):
    """Appends (path, type, value-or-None) in document order; keys of name-keyed maps stay in the
    path so that request names and status codes are compared."""
    t = json_type(v)
    if t == "object":
        out.append((path, t, None))
        for k, x in v.items():
            flatten(x, f"{path}.{k}" if path else k, out, counts, masker)
    elif t == "array":
        if TIMED_ARRAYS.search(path):
            out.append((path, t, None))
            return
        out.append((path, t, len(v) if ALWAYS.match(path + "[]") else None))
        for x in v:
            flatten(x, path + "[]", out, counts, masker)
    else:
        if t in ("int", "float", "null") and NULLABLE.search(path):
            t = "number|null"
        keep = (ALWAYS.match(path) or (counts and COUNTS.match(path))) and not TIMED.search(path)
        if keep and isinstance(v, str):
            v = masker(v)
        out.append((path, t, v if keep else None))


def json_view(text, counts, masker):
    v = json.loads(text)
    out = []
    flatten(v, "", out, counts, masker)
    # Arrays of per-interval or per-step records repeat their paths: keep each (path, type, value)
    # once, in order of first appearance, plus how often a compared path occurs.
    seen, view = set(), []
    for e in out:
        key = (e[0], e[1], json.dumps(e[2]))
        if key not in seen:
            seen.add(key)
            view.append(e)
    lines = [f"{p} : {t}" + ("" if val is None else f" = {json.dumps(val)}") for p, t, val in view]
    # What holds whatever the timing: no request vanishes, and a run with faults has failures.
    r = v.get("requests") if isinstance(v, dict) else None
    if isinstance(r, dict) and all(k in r for k in ("intended", "completed", "failed")):
        lines.append("intended = completed + failed + in_flight_at_end: "
                     f"{r['intended'] == r['completed'] + r['failed'] + r.get('in_flight_at_end', 0)}")
        lines.append(f"some failed: {r['failed'] > 0}")
    return lines


def text_view(text, masker, counts=True):
    """The report's lines with numbers masked; with `counts` False (a run whose sample count is
    timing, as a closed loop's or an interrupted one's), the confidence-interval rows, which say
    whether there were enough samples, and the lines about unfinished requests are left out too."""
    lines = []
    for line in masker(text).splitlines():
        if TIMING_LINES.search(line) or (not counts and CI_ROWS.search(line)):
            continue
        line = line.replace("(beyond the data)", "#")
        line = NUMBER.sub("#", line)
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return lines


def hlog_view(text, masker):
    heads, tags = [], []
    for line in text.splitlines():
        if line.startswith("#") or line.startswith('"'):
            line = re.sub(r"\w{3} \w{3} +\d+ [\d:]+ \w+ \d{4}", "<DATE>", masker(line))
            heads.append(NUMBER.sub("#", line))
        else:
            tag = line.split(",")[0] if line.startswith("Tag=") else "(untagged)"
            if tag not in tags:
                tags.append(tag)
    return heads + ["tags: " + " ".join(tags)]


def html_view(text):
    return re.findall(r'<section[^>]*\bid="([^"]+)"', text) + [
        "ids: " + " ".join(sorted(set(re.findall(r'\bid="([^"]+)"', text))))]


# ---- the cases ----------------------------------------------------------------------------------

def artifacts(side, rc, out, err, files, counts=True, exact=False):
    """What one side of a case produced, each as a list of comparable lines."""
    res = {"exit code": [str(rc)]}
    if files == ["-"]:
        # `--json -`: the results on stdout, the text report on stderr.
        res["stdout"] = json_view(out, counts, side.mask)
        res["stderr"] = text_view(err, side.mask, counts)
    elif exact:
        res["stdout"] = side.mask(out).splitlines()
        res["stderr"] = side.mask(err).splitlines()
    else:
        res["stdout"] = text_view(out, side.mask, counts)
        # Progress lines and the live line go to stderr; only error lines are compared.
        res["stderr"] = [l for l in text_view(err, side.mask) if "error" in l.lower()]
    for name in (f for f in files if f != "-"):
        p = side.path(name)
        if not os.path.exists(p):
            res[name] = ["(not written)"]
            continue
        with open(p, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if name.endswith(".json"):
            res[name] = json_view(text, counts, side.mask)
        elif name.endswith(".hlog"):
            res[name] = hlog_view(text, side.mask)
        elif name.endswith(".html"):
            res[name] = html_view(text)
        else:
            res[name] = text_view(text, side.mask, counts)
    return res


def run_case(args, files=(), counts=True, exact=False, serve=()):
    """A case that runs `candor run ARGS` (with {url} replaced by its server's URL)."""

    def case(side):
        url = side.serve(*serve)
        argv = [a.replace("{url}", url).replace("{dir}", side.dir) for a in args]
        rc, out, err = side.run(*argv)
        return artifacts(side, rc, out, err, files, counts, exact)

    return case


def with_files(texts, inner):
    """Writes the input files a case reads into the side's directory first."""

    def case(side):
        for name, text in texts.items():
            side.write(name, text)
        return inner(side)

    return case


N = ["-n", "200", "-R", "400", "-c", "4", "-q"]  # a fixed-count open loop of 0.5 s


def case_h2(side):
    rc, out, err = side.run("run", "--h2", "-c", "2", "--streams", "8", *N, "--json", "a.json",
                            side.shared.h2_url)
    return artifacts(side, rc, out, err, ["a.json"])


def case_https(side):
    rc, out, err = side.run("run", "--ca", side.shared.ca, *N, "--json", "a.json",
                            side.shared.tls_url)
    return artifacts(side, rc, out, err, ["a.json"])


def case_https_insecure_h1(side):
    rc, out, err = side.run("run", "-k", *N, "--json", "a.json", side.shared.tls_url)
    return artifacts(side, rc, out, err, ["a.json"])


def case_tcp(kind):
    def case(side):
        framing = {"bytes": ["--payload", "ping\\n", "--expect-bytes", "5"],
                   "delimiter": ["--payload", "ping\\r\\n", "--expect-delimiter", "\\r\\n"],
                   "prefix": ["--payload", "hex:0003616263", "--length-prefix", "u16be"]}[kind]
        rc, out, err = side.run("run", *framing, *N, "--json", "a.json", side.shared.echo_url)
        return artifacts(side, rc, out, err, ["a.json"])

    return case


def case_shards(side):
    url = side.serve()
    res = {}
    for i in range(2):
        rc, out, err = side.run("run", "--shard", f"{i}/2", "-R", "400", "-d", "1s", "-c", "2", "-q",
                                "--json", f"s{i}.json", url)
        res.update({f"shard {i} {k}": v for k, v in
                    artifacts(side, rc, out, err, [f"s{i}.json"]).items()})
    rc, out, err = side.run("merge", "-o", "m.json", "s0.json", "s1.json")
    res.update({f"merge {k}": v for k, v in artifacts(side, rc, out, err, ["m.json"]).items()})
    rc, out, err = side.run("merge", "--as-repeats", "-o", "r.json", "s0.json", "s1.json")
    res.update({f"merge --as-repeats {k}": v for k, v in
                artifacts(side, rc, out, err, ["r.json"]).items()})
    return res


def case_report_compare(side):
    """report (text, HTML, .hgrm, .hlog) and compare over two fixed-count runs."""
    url = side.serve()
    res = {}
    for name in ("a", "b"):
        rc, out, err = side.run("run", *N, "--json", f"{name}.json", "--hlog", f"{name}.hlog",
                                "--hgrm", f"{name}.hgrm", url)
        res.update({f"run {name} {k}": v for k, v in
                    artifacts(side, rc, out, err, [f"{name}.json", f"{name}.hlog"]).items()})
    steps = [
        ("report json", ["report", "a.json", "-o", "a.html", "--hgrm", "ra.hgrm",
                         "--hlog", "ra.hlog", "--slo", "p99<10s"], ["a.html", "ra.hlog"]),
        ("report two", ["report", "a.json", "b.json", "--label", "before,after", "-o", "ab.html",
                        "--title", "T"], ["ab.html"]),
        ("report hlog", ["report", "a.hlog", "--tag", "service_time"], []),
        ("compare", ["compare", "a.json", "b.json", "--label", "x,y", "--json", "c.json"],
         ["c.json"]),
        ("compare send-lag", ["compare", "--measure", "send-lag", "a.json", "b.hlog"], []),
    ]
    for label, argv, files in steps:
        rc, out, err = side.run(*argv)
        # compare's verdicts depend on the two runs' timing; its JSON's structure does not.
        res.update({f"{label} {k}": v for k, v in
                    artifacts(side, rc, out, err, files, counts=False).items()
                    if not (label.startswith("compare") and k in ("stdout", "exit code"))})
    return res


def case_sweep(side):
    url = side.serve()
    rc, out, err = side.run("sweep", "--rates", "100,200", "-d", "500ms", "--pause", "100ms", "-c", "2",
                            "-q", "--json", "s.json", url)
    return artifacts(side, rc, out, err, ["s.json"])


def case_capacity(side):
    url = side.serve()
    rc, out, err = side.run("capacity", "--slo", "p99<1s", "--min", "100", "--max", "400",
                            "--max-steps", "3", "--confirm", "1", "-d", "500ms", "--pause", "100ms",
                            "-c", "2", "-q", "--json", "cap.json", url)
    return artifacts(side, rc, out, err, ["cap.json"])


def case_h2_tls(side):
    rc, out, err = side.run("run", "--h2", "--ca", side.shared.h2_ca, "-c", "2", *N, "--json",
                            "a.json", side.shared.h2_tls_url)
    return artifacts(side, rc, out, err, ["a.json"])


def case_sigint(side):
    """SIGINT ends a run promptly with its results written."""
    url = side.serve()
    p = subprocess.Popen([side.bin, "run", "-R", "200", "-d", "20s", "-c", "2", "-q", "--json",
                          "a.json", url], cwd=side.dir, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=1.0)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=RUN_TIMEOUT_S)
    return artifacts(side, p.returncode, out, err, ["a.json"], counts=False)


def case_pause(side):
    url, pid = side.serve_pid()
    rc, out, err = side.run("run", "-R", "200", "-d", "1s", "-c", "2", "-q", "--pause-pid", str(pid),
                            "--pause-at", "300ms", "--pause-for", "200ms", "--expect", "--json",
                            "a.json", url)
    return artifacts(side, rc, out, err, ["a.json"], counts=False)


def case_correct(side):
    url = side.serve()
    res = {}
    rc, out, err = side.run("run", *N, "--json", "a.json", "--hlog", "a.hlog", url)
    res.update({f"run {k}": v for k, v in artifacts(side, rc, out, err, ["a.json"]).items()})
    for label, argv in (("json", ["a.json"]), ("hlog", ["a.hlog", "--tag", "service_time"])):
        rc, out, err = side.run("correct", "--expected-interval", "5ms", *argv, "--hgrm",
                                f"c-{label}.hgrm")
        res.update({f"correct {label} {k}": v for k, v in
                    artifacts(side, rc, out, err, [f"c-{label}.hgrm"]).items()})
    return res


def exact_case(argv, files):
    """A command over the shared inputs (results files written once by the baseline): the same
    bytes in, so the same bytes out, paths masked."""

    def case(side):
        for name in os.listdir(side.shared.inputs):
            shutil.copy(os.path.join(side.shared.inputs, name), side.dir)
        rc, out, err = side.run(*argv)
        res = {"exit code": [str(rc)], "stdout": side.mask(out).splitlines(),
               "stderr": side.mask(err).splitlines()}
        for name in files:
            p = side.path(name)
            if not os.path.exists(p):
                res[name] = ["(not written)"]
                continue
            with open(p, encoding="utf-8", errors="replace") as f:
                res[name] = side.mask(f.read()).splitlines()
        return res

    return case


def case_demo(side):
    # Its closed loop counts what the machine's speed allows.
    rc, out, err = side.run("demo", "--duration", "1s", "--stall-every", "500ms", "--stall-for",
                            "100ms", "-R", "200")
    return artifacts(side, rc, out, err, [], counts=False)


def bad(args):
    """Bad input: the one-line error and the exit code must be identical."""

    def case(side):
        url = side.serve()
        argv = [a.replace("{url}", url) for a in args]
        rc, out, err = side.run(*argv)
        return artifacts(side, rc, out, err, [], exact=True)

    return case


REQS = ('{"name": "home", "path": "/home", "weight": 3}\n'
        '{"name": "user", "method": "POST", "path": "/u/{{data:id}}", '
        '"headers": {"X-User": "{{data:user}}"}, "body": "id={{data:id}}", "weight": 1}\n')
CSV = 'user,id\nalice,1\n"bob, jr",2\n'
TRACE = "".join(f'{{"at": {i * 0.01:.2f}, "path": "/r{i % 3}"}}\n' for i in range(100))

CASES = [
    ("run closed loop", run_case(["run", "-R", "max", "-d", "1s", "-c", "2", "-q", "--json", "a.json",
                                  "{url}"], ["a.json"], counts=False)),
    ("run open loop", run_case(["run", *N, "--json", "a.json", "{url}"], ["a.json"])),
    ("run open loop poisson -L", run_case(["run", *N, "--arrival", "poisson", "--seed", "7", "-L",
                                           "--json", "a.json", "{url}"], ["a.json"])),
    ("run open loop -d", run_case(["run", "-R", "300", "-d", "1s", "-c", "2", "-q", "--json", "a.json",
                                   "{url}"], ["a.json"])),
    ("run pipeline POST", run_case(["run", *N, "--pipeline", "4", "-m", "POST", "--body", "hello",
                                    "-H", "X-A: 1", "--json", "a.json", "{url}"], ["a.json"])),
    ("run --h2", case_h2),
    ("run https --ca", case_https),
    ("run https -k", case_https_insecure_h1),
    ("run tcp expect-bytes", case_tcp("bytes")),
    ("run tcp expect-delimiter", case_tcp("delimiter")),
    ("run tcp length-prefix", case_tcp("prefix")),
    ("run stages", run_case(["run", "-R", "200:1s,100..300:1s", "-c", "2", "-q", "--json", "a.json",
                             "{url}"], ["a.json"])),
    ("run stages --slo", run_case(["run", "-R", "200:1s,400:1s", "-c", "2", "-q", "--slo",
                                   "p99<1s,errors<1%", "--json", "a.json", "{url}"], ["a.json"])),
    ("run requests weights data", with_files(
        {"reqs.jsonl": REQS, "users.csv": CSV},
        run_case(["run", *N, "--requests", "{dir}/reqs.jsonl", "--data", "{dir}/users.csv",
                  "--request-order", "random", "--json", "a.json", "{url}"], ["a.json"],
                 counts=False))),
    ("run requests round-robin", with_files(
        {"reqs.jsonl": REQS.replace(', "weight": 3', "").replace(', "weight": 1', ""),
         "users.csv": CSV},
        run_case(["run", *N, "--requests", "{dir}/reqs.jsonl", "--data", "{dir}/users.csv",
                  "--json", "a.json", "{url}"], ["a.json"]))),
    ("run url template --data", with_files(
        {"users.csv": CSV},
        run_case(["run", *N, "--data", "{dir}/users.csv", "--data-order", "random", "--json", "a.json",
                  "{url}/u/{{data:id}}?n={{data:user}}"], ["a.json"]))),
    ("run --replay", with_files(
        {"trace.jsonl": TRACE},
        run_case(["run", "--replay", "{dir}/trace.jsonl", "--speed", "2", "-c", "2", "-q",
                  "--json", "a.json", "{url}"], ["a.json"]))),
    ("run --slo pass", run_case(["run", *N, "--slo", "p99<1s,max<2s,errors<0.1%", "--json", "a.json",
                                 "{url}"], ["a.json"])),
    ("run --slo fail", run_case(["run", *N, "--slo", "p50<1ns", "--json", "a.json", "{url}"],
                                ["a.json"])),
    ("run --warmup", run_case(["run", "-R", "400", "-d", "1s", "--warmup", "500ms", "-c", "2", "-q",
                               "--json", "a.json", "{url}"], ["a.json"])),
    ("run --hlog --hgrm", run_case(["run", *N, "--hlog", "a.hlog", "--hgrm", "a.hgrm", "--json",
                                    "a.json", "{url}"], ["a.json", "a.hlog"])),
    ("run --json -", run_case(["run", *N, "--json", "-", "{url}"], ["-"])),
    ("run checks", run_case(["run", *N, "--check-status", "2xx", "--check-body", "nope",
                             "--check-header", "Content-Length: 2", "--json", "a.json", "{url}"],
                            ["a.json"])),
    ("run fault reset", run_case(["run", *N, "--json", "a.json", "{url}"], ["a.json"],
                                 counts=False, serve=("--fault", "reset", "--fault-every", "5"))),
    ("run fault garbage", run_case(["run", *N, "--json", "a.json", "{url}"], ["a.json"],
                                   counts=False, serve=("--fault", "garbage", "--fault-every", "7"))),
    ("run fault close-mid-response", run_case(
        ["run", *N, "--json", "a.json", "{url}"], ["a.json"], counts=False,
        serve=("--fault", "close-mid-response", "--fault-every", "4"))),
    ("run shards + merge", case_shards),
    ("report + compare", case_report_compare),
    ("sweep", case_sweep),
    ("capacity", case_capacity),
    ("bad: bare duration", bad(["run", "-d", "5", "{url}"])),
    ("bad: rate", bad(["run", "-R", "fast", "{url}"])),
    ("bad: url", bad(["run", "-d", "1s", "ftp://x/"])),
    ("bad: -t above -c", bad(["run", "-t", "4", "-c", "2", "-d", "1s", "{url}"])),
    ("bad: shard", bad(["run", "--shard", "2/2", "-d", "1s", "{url}"])),
    ("bad: stages and -d", bad(["run", "-R", "100:1s,200:1s", "-d", "5s", "{url}"])),
    ("bad: stage", bad(["run", "-R", "100:1s,x:2s", "{url}"])),
    ("bad: slo", bad(["run", "--slo", "p99<", "-d", "1s", "{url}"])),
    ("bad: placeholder", bad(["run", "-d", "1s", "{url}/{{nope}}"])),
    ("bad: no --data", bad(["run", "-d", "1s", "{url}/{{data:user}}"])),
    ("bad: replay missing", bad(["run", "--replay", "/nonexistent/trace", "{url}"])),
    ("bad: check-header", bad(["run", "--check-header", "bad", "-d", "1s", "{url}"])),
    ("bad: tcp without framing", bad(["run", "-d", "1s", "--payload", "x", "tcp://127.0.0.1:1"])),
    ("bad: payload on http", bad(["run", "-d", "1s", "--payload", "x", "{url}"])),
    ("bad: h2 on tcp", bad(["run", "--h2", "-d", "1s", "--expect-bytes", "1", "tcp://127.0.0.1:1"])),
    ("bad: -n with max", bad(["run", "-R", "max", "-n", "10", "{url}"])),
    ("bad: pipeline 0", bad(["run", "--pipeline", "0", "-d", "1s", "{url}"])),
    ("bad: warmup", bad(["run", "--warmup", "x", "-d", "1s", "{url}"])),
    ("bad: report missing", bad(["report", "/nonexistent.json"])),
    ("bad: compare one", bad(["compare", "/nonexistent.json"])),
    ("bad: merge none", bad(["merge", "-o", "/dev/null", "/nonexistent.json"])),
    ("bad: sweep rates", bad(["sweep", "--rates", "100,x", "-d", "1s", "{url}"])),
    ("bad: capacity slo", bad(["capacity", "--slo", "p99<", "{url}"])),
    ("bad: capacity min>max", bad(["capacity", "--slo", "p99<1s", "--min", "500", "--max", "100",
                                   "{url}"])),
    ("bad: demo duration", bad(["demo", "--duration", "5"])),
    ("bad: k8s without flags", bad(["k8s", "--shards", "2", "--image", "c", "--", "-d", "1s"])),
    ("k8s yaml", bad(["k8s", "--shards", "3", "--image", "candor:1", "--start-at",
                      "2030-01-01T00:00:00Z", "--", "-R", "3k", "-d", "10s", "--slo", "p99<10ms",
                      "http://svc:80/"])),
    ("k8s json", bad(["k8s", "--shards", "2", "--image", "candor:1", "--start-at", "1900000000",
                      "--format", "json", "--pvc", "res", "--live-port", "9464", "--", "-R",
                      "1k", "-d", "5s", "http://svc:80/"])),
    ("run --h2 https", case_h2_tls),
    ("run --h2 against HTTP/1.1", run_case(["run", "--h2", *N, "--json", "a.json", "{url}"],
                                           ["a.json"], counts=False)),
    ("run SIGINT", case_sigint),
    ("run --pause-pid --expect", case_pause),
    ("run --repeat", run_case(["run", *N, "--repeat", "2", "--repeat-pause", "100ms", "--json",
                               "a.json", "{url}"], ["a.json"])),
    ("run --abort-on-fail", run_case(["run", "-R", "200", "-d", "5s", "-c", "2", "-q", "--slo",
                                      "max<1ns", "--abort-on-fail", "--json", "a.json", "{url}"],
                                     ["a.json"], counts=False)),
    ("correct", case_correct),
    ("same inputs: merge", exact_case(["merge", "-o", "m.json", "s0.json", "s1.json"], ["m.json"])),
    ("same inputs: merge --as-repeats --slo", exact_case(
        ["merge", "--as-repeats", "--slo", "p99<1s", "-o", "r.json", "a.json", "b.json"],
        ["r.json"])),
    ("same inputs: merge shards --as-repeats (refused)", exact_case(
        ["merge", "--as-repeats", "-o", "r.json", "s0.json", "s1.json"], ["r.json"])),
    ("same inputs: merge to stdout", exact_case(["merge", "-o", "-", "s0.json", "s1.json"], [])),
    ("same inputs: report", exact_case(
        ["report", "a.json", "--slo", "p99<1s,errors<1%", "--hgrm", "x.hgrm", "--hlog", "x.hlog",
         "-o", "x.html"], ["x.hgrm", "x.hlog", "x.html"])),
    ("same inputs: report two", exact_case(
        ["report", "a.json", "b.json", "--label", "before,after", "-o", "y.html"], ["y.html"])),
    ("same inputs: report merged shards", exact_case(["report", "s0.json", "s1.json"], [])),
    ("same inputs: report .hlog", exact_case(
        ["report", "a.hlog", "--tag", "send_lag", "--start", "0", "--end", "5"], [])),
    ("same inputs: compare", exact_case(
        ["compare", "a.json", "b.json", "--json", "c.json", "--noise", "3%"], ["c.json"])),
    ("same inputs: compare repeats", exact_case(
        ["compare", "a.json", "rep.json", "--fail-if-slower", "p99"], [])),
    ("same inputs: correct", exact_case(
        ["correct", "--expected-interval", "5ms", "a.json", "--hgrm", "c.hgrm"], ["c.hgrm"])),
    ("demo", case_demo),
] + [(f"help {c}".rstrip(), bad([c, "--help"] if c else ["--help"]))
     for c in ("", "run", "serve", "report", "compare", "merge", "sweep", "capacity", "calibrate",
               "demo", "k8s", "correct")]


class Shared:
    """Servers both binaries use: HTTP/2, HTTPS (with its CA file) and a TCP echo."""

    def __init__(self, work, baseline):
        self.baseline = baseline
        self.servers = Servers()
        self.ca = self.h2_ca = None
        self.h2_url = self.tls_url = self.echo_url = None
        self.work = work

    def make_inputs(self):
        """Results files for the commands that read them, written once by the baseline."""
        self.inputs = os.path.join(self.work, "inputs")
        os.makedirs(self.inputs, exist_ok=True)
        url, _ = self.servers.start([self.baseline, "serve", "--listen", "127.0.0.1:0"])
        common = ["-c", "2", "-q"]
        for argv in (["-R", "200:500ms,400:500ms", "--shard", "0/2", "--json", "s0.json"],
                     ["-R", "200:500ms,400:500ms", "--shard", "1/2", "--json", "s1.json"],
                     ["-n", "200", "-R", "400", "--json", "a.json", "--hlog", "a.hlog"],
                     ["-n", "200", "-R", "400", "--json", "b.json"],
                     ["-n", "100", "-R", "400", "--repeat", "3", "--repeat-pause", "100ms",
                      "--json", "rep.json"]):
            subprocess.run([self.baseline, "run", *common, *argv, url], cwd=self.inputs,
                           capture_output=True, timeout=RUN_TIMEOUT_S)

    def start(self):
        names = ["h2_server", "tls_server", "echo_server"]
        if not all(os.path.exists(os.path.join(EXAMPLES, n)) for n in names):
            subprocess.run(["cargo", "build", "--release", "-p", "candor-load"]
                           + [a for n in names for a in ("--example", n)], cwd=ROOT, check=True)
        self.ca = os.path.join(self.work, "tls-ca.pem")
        self.h2_url, _ = self.servers.start([os.path.join(EXAMPLES, "h2_server"), "127.0.0.1:0"])
        self.tls_url, _ = self.servers.start([os.path.join(EXAMPLES, "tls_server"), "127.0.0.1:0",
                                              self.ca])
        self.echo_url, _ = self.servers.start([os.path.join(EXAMPLES, "echo_server"),
                                               "127.0.0.1:0"])
        self.make_inputs()
        self.h2_ca = os.path.join(self.work, "h2-ca.pem")
        self.h2_tls_url, _ = self.servers.start([os.path.join(EXAMPLES, "h2_server"), "127.0.0.1:0",
                                                 "--tls", self.h2_ca])


def differences(a, b):
    """The lines only before (-) and only after (+), in order."""
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            out += [f"-{x!r}" for x in a[i1:i2]] + [f"+{y!r}" for y in b[j1:j2]]
    return out


def compare(before, after, verbose):
    diffs = []
    for name in list(dict.fromkeys(list(before) + list(after))):
        a, b = before.get(name, ["(missing)"]), after.get(name, ["(missing)"])
        d = differences(a, b)
        if d:
            shown = d if verbose else d[:4]
            more = "" if len(shown) == len(d) else f" (+{len(d) - len(shown)} more lines)"
            diffs.append(f"{name}: " + " ".join(shown) + more)
    return diffs


def run_side(case, binary, directory, shared):
    os.makedirs(directory, exist_ok=True)
    side = Side(binary, directory, shared)
    try:
        return case(side)
    except (subprocess.TimeoutExpired, RuntimeError, OSError, ValueError) as e:
        return {"case": [f"failed: {e}"]}
    finally:
        side.servers.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", required=True, help="the candor binary before the change")
    ap.add_argument("--new", required=True, help="the candor binary after the change")
    ap.add_argument("--only", help="comma-separated case names (substrings) to run")
    ap.add_argument("--keep", help="keep every side's files under this directory")
    ap.add_argument("--retries", type=int, default=1,
                    help="run a differing case again this many times (default 1)")
    ap.add_argument("--verbose", action="store_true", help="print every differing line")
    a = ap.parse_args()
    bins = [os.path.abspath(a.baseline), os.path.abspath(a.new)]
    for b in bins:
        if not os.access(b, os.X_OK):
            sys.exit(f"same_output: {b} is not an executable")
    work = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="candor-same-")
    os.makedirs(work, exist_ok=True)
    # Both run as `candor` (usage lines name the program as it was called).
    for i, side_name in enumerate(("before", "after")):
        link = os.path.join(work, f"bin-{side_name}", "candor")
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(bins[i], link)
        bins[i] = link
    shared = Shared(work, bins[0])
    differing = 0
    try:
        shared.start()
        for i, (name, case) in enumerate(CASES):
            if a.only and not any(s in name for s in a.only.split(",")):
                continue
            # A machine shared with other work can freeze a process for a second, which changes
            # what a run counts: a case that differs is run again, and reported as differing
            # only if it differs every time (the first difference is still shown).
            first = None
            for attempt in range(1 + a.retries):
                diffs = compare(*(run_side(case, b, os.path.join(work, f"{i:02}-{attempt}-{s}"),
                                           shared)
                                  for s, b in zip(("before", "after"), bins)), a.verbose)
                if not diffs:
                    break
                first = first or diffs
            if diffs:
                differing += 1
                print(f"{name}: DIFFERS: " + "; ".join(diffs if a.verbose else diffs[:3])
                      + ("" if a.verbose or len(diffs) <= 3 else f"; (+{len(diffs) - 3} more)"),
                      flush=True)
            elif first:
                print(f"{name}: same (on attempt {attempt + 1}; first: {'; '.join(first[:2])})",
                      flush=True)
            else:
                print(f"{name}: same", flush=True)
    finally:
        shared.servers.stop()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{differing} case(s) differ" if differing else "all cases same")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
