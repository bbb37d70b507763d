#!/usr/bin/env python3
"""Tests of bench/same_output.py: what it masks (timing) and what it must still see (a key, a type,
a config value, a word, an exit code); end to end, a binary whose results file gains one key, or
whose merged file one byte, is reported as differing. `python3 bench/test_same_output.py` (the
end-to-end test needs target/release/candor, or CANDOR=path)."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import same_output as so  # noqa: E402

RUN = {
    "schema_version": 1,
    "kind": "run",
    "config": {"connections": 2, "rate_per_s": 200.0, "check_status": "1xx,2xx,3xx"},
    "start_time_unix_s": 1.5,
    "requests": {"intended": 100, "completed": 100, "failed": 0, "in_flight_at_end": 0,
                 "errors": {"read": 0}, "generator_late": 4},
    "response_time": {"count": 100, "max_ns": 8691711,
                      "percentiles": [{"percentile": 50.0, "value_ns": 92159}]},
    "intervals": [{"start_s": 0.0, "completed": 100}],
    "warnings": [],
}


def view(doc, counts=True):
    return so.json_view(json.dumps(doc), counts, lambda s: s)


def changed(path, value, doc=RUN):
    root = json.loads(json.dumps(doc))
    d = root
    *parents, last = path
    for p in parents:
        d = d[p]
    d[last] = value
    return root


class JsonView(unittest.TestCase):
    def test_timing_values_are_masked(self):
        for path, value in [(["response_time", "max_ns"], 1),
                            (["start_time_unix_s"], 9.0),
                            (["requests", "generator_late"], 0),
                            (["intervals"], [{"start_s": 0.0, "completed": 99}]),
                            (["warnings"], ["the generator itself sent 4 requests late"])]:
            self.assertEqual(view(RUN), view(changed(path, value)), path)

    def test_structure_types_and_fixed_values_are_seen(self):
        for path, value in [(["config", "connections"], 3),
                            (["config", "rate_per_s"], 200),  # float written as an integer
                            (["requests", "completed"], 99),
                            (["requests", "errors", "write"], 0),  # a key added
                            (["response_time", "percentiles"], [{"percentile": 50.0}]),
                            (["kind"], "merge")]:
            self.assertNotEqual(view(RUN), view(changed(path, value)), path)

    def test_key_order_is_seen(self):
        moved = {k: RUN[k] for k in reversed(list(RUN))}
        self.assertNotEqual(view(RUN), view(moved))

    def test_counts_are_compared_only_when_fixed(self):
        other = changed(["requests", "completed"], 7, changed(["requests", "intended"], 7))
        self.assertEqual(view(RUN, counts=False), view(other, counts=False))


    def test_a_vanished_request_and_failures_are_seen_without_counts(self):
        lost = changed(["requests", "completed"], 99)
        self.assertNotEqual(view(RUN, counts=False), view(lost, counts=False))
        failing = changed(["requests", "failed"], 5, changed(["requests", "completed"], 95))
        self.assertNotEqual(view(RUN, counts=False), view(failing, counts=False))


class TextView(unittest.TestCase):
    def test_numbers_and_units_are_masked(self):
        a = "  p99                       3.670ms        130.1us      3.561ms\n"
        b = "  p99  12.00us 1.2s 999ns\n"
        self.assertEqual(so.text_view(a, str), so.text_view(b, str))

    def test_words_are_seen(self):
        a = "  requests: 100 intended = 100 completed + 0 failed + 0 unfinished\n"
        b = "  requests: 100 intended = 100 completed + 0 failed\n"
        self.assertNotEqual(so.text_view(a, str), so.text_view(b, str))

    def test_slow_machine_warnings_are_left_out(self):
        a = "x 1\nWARNING: send lag p99 is 3.561ms: requests often waited\n"
        self.assertEqual(so.text_view(a, str), so.text_view("x 2\n", str))
        b = "x 1\nWARNING: 5 requests failed\n"
        self.assertNotEqual(so.text_view(b, str), so.text_view("x 2\n", str))


class OtherViews(unittest.TestCase):
    def test_hlog_tags_and_headers(self):
        a = "#[StartTime: 1.5 (seconds since epoch), Wed Nov 25 16:29:15 UTC 2026]\n" \
            "Tag=send_lag,0.1,1.0,5,HIST\n0.1,1.0,5,HIST\n"
        b = a.replace("1.5", "2.25").replace("16:29:15", "17:00:01")
        self.assertEqual(so.hlog_view(a, str), so.hlog_view(b, str))
        self.assertNotEqual(so.hlog_view(a, str), so.hlog_view(a.replace("send_lag", "lag"), str))

    def test_html_ids(self):
        a = '<section id="spectrum"><p id="x">1</p></section><section id="stages">'
        self.assertNotEqual(so.html_view(a), so.html_view(a.replace("stages", "stage")))


def candor():
    path = os.environ.get("CANDOR") or os.path.join(so.ROOT, "target", "release", "candor")
    return path if os.access(path, os.X_OK) else None


@unittest.skipIf(candor() is None, "needs target/release/candor (cargo build --release)")
class EndToEnd(unittest.TestCase):
    def script(self, new, only):
        return subprocess.run([sys.executable, os.path.join(so.ROOT, "bench", "same_output.py"),
                               "--baseline", candor(), "--new", new, "--only", only,
                               "--retries", "0"], capture_output=True, text=True, timeout=120)

    def test_same_binary_is_same(self):
        p = self.script(candor(), "run open loop -d,bad: rate")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count(": same"), 2, p.stdout)

    def test_one_key_more_in_the_results_is_seen(self):
        with tempfile.TemporaryDirectory() as d:
            # The same binary, but its --json file gets one key more after the run.
            wrapper = os.path.join(d, "candor")
            with open(wrapper, "w") as f:
                f.write(f"""#!{sys.executable}
import json, os, subprocess, sys
if sys.argv[1] not in ("run", "merge"):  # serve is stopped by its pid: it must be the real process
    os.execv({candor()!r}, [{candor()!r}] + sys.argv[1:])
rc = subprocess.call(sys.argv, executable={candor()!r})  # argv[0] as called, like the real one
if "--json" in sys.argv:
    path = sys.argv[sys.argv.index("--json") + 1]
    v = json.load(open(path))
    v["extra"] = 1
    json.dump(v, open(path, "w"))
if sys.argv[1] == "merge" and sys.argv[2] == "-o":  # one byte more
    open(sys.argv[3], "a").write(" ")
sys.exit(rc)
""")
            os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
            p = self.script(wrapper, "run open loop -d,bad: rate,same inputs: merge")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("run open loop -d: DIFFERS: a.json: +'extra : int'", p.stdout)
        self.assertIn("bad: rate: same", p.stdout)
        self.assertIn("same inputs: merge: DIFFERS: m.json:", p.stdout)
        self.assertIn("same inputs: merge to stdout: same", p.stdout)


if __name__ == "__main__":
    unittest.main()
