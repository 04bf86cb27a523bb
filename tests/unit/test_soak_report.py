#!/usr/bin/python3
"""The soak's figures and verdict (tests/soak/soak_report.py) on made-up
samples: heap in use that grew between the quiet readings fails whatever
the load did; RSS drift fails only where it is judged (runs of 10 minutes
or more); a sanitizer build is judged on neither; descriptors or threads
that grew fail always.

    /usr/bin/python3 tests/unit/test_soak_report.py [-v]
"""

import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "soak"))

import soak_report  # noqa: E402

START, END = 50.0, 180.0
BOUND = 2048


def samples(rss_kib_per_s, seed=1):
    """A sample every 2 s from START to END under a load that comes and
    goes: RSS 25 MiB ± 1 MiB plus the given climb."""
    rnd = random.Random(seed)
    out = []
    t = START
    while t <= END:
        rss = 25600 + rnd.uniform(-1024, 1024) + rss_kib_per_s * (t - START)
        out.append(dict(time=t, rss_kib=int(rss), heap_kib=90000 + rnd.randrange(40000),
                        fds=40, threads=7, clients=22, rooms=12))
        t += 2
    return out


def quiet(t, heap, rss=23000, fds=13, threads=7):
    return dict(time=t, rss_kib=rss, heap_kib=heap, fds=fds, threads=threads, clients=0,
                rooms=1)


def judge(s, start, end, seconds=180, sanitizer=None):
    judges, unjudged = soak_report.soak_judges(seconds, sanitizer)
    f = soak_report.figures(s, start, end, (START, END))
    lines = soak_report.summary(f, start, end, BOUND, judges, unjudged)
    return f, soak_report.verdict(f, start, end, BOUND, judges), lines


class Verdict(unittest.TestCase):
    def test_the_same_heap_at_both_quiet_readings_passes(self):
        f, why, _ = judge(samples(0), quiet(45, 12300), quiet(185, 12500))
        self.assertEqual(f["heap_growth_kib"], 200)
        self.assertEqual(why, [])

    def test_a_heap_that_grew_past_the_bound_fails(self):
        f, why, lines = judge(samples(0), quiet(45, 12300), quiet(185, 12300 + BOUND + 1))
        self.assertEqual(len(why), 1, why)
        self.assertIn("heap in use grew 2049 KiB", why[0])
        self.assertTrue(any(line.startswith("heap in use:") and line.endswith(f"bound {BOUND} KiB")
                            for line in lines), lines)

    def test_a_short_run_prints_the_rss_drift_and_says_why_it_is_not_judged(self):
        f, why, lines = judge(samples(20), quiet(45, 12300), quiet(185, 12300))
        self.assertAlmostEqual(f["drift_kib"], 20 * (END - START), delta=600)
        self.assertEqual(why, [])
        rss = [line for line in lines if line.startswith("rss drift")]
        self.assertEqual(len(rss), 1, lines)
        self.assertIn("not judged (a run under 10 minutes", rss[0])

    def test_a_long_run_judges_the_rss_drift(self):
        _, why, _ = judge(samples(20), quiet(45, 12300), quiet(185, 12300), seconds=3600)
        self.assertEqual(len(why), 1, why)
        self.assertIn("RSS drift", why[0])
        _, why, _ = judge(samples(0), quiet(45, 12300), quiet(185, 12300), seconds=3600)
        self.assertEqual(why, [])

    def test_a_sanitizer_build_is_judged_on_neither(self):
        _, why, lines = judge(samples(20), quiet(45, 100), quiet(185, 100 + 10 * BOUND),
                              seconds=3600, sanitizer="asan")
        self.assertEqual(why, [])
        self.assertEqual(sum("not judged (asan build" in line for line in lines), 2, lines)

    def test_descriptors_or_threads_that_grew_fail(self):
        _, why, _ = judge(samples(0), quiet(45, 12300), quiet(185, 12300, fds=14, threads=8),
                          sanitizer="tsan")
        self.assertEqual(len(why), 2, why)
        self.assertTrue(why[0].startswith("fds grew from 13 to 14"), why)


if __name__ == "__main__":
    unittest.main()
