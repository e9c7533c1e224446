"""test_tune_check.py — bench/tune_check.py judges auto's pick against the fastest forced
strategy of each point: a pick more than --slack slower is a miss (exit 1), repeated sweeps are
judged by their medians, unverified rows never count, and a sweep whose auto did not read a
tuning file fails; a miss of the sweep is written to misses.txt, and where confirm/ holds
head-to-head rounds it stands only when their median ratio is above the slack.

Needs no build: it runs the script on made-up sweep files.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "tune_check.py")

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def row(requested, strategy, ms, n=1, m=64, k=256, verified=True, typ="q4_0"):
    return {"type": typ, "m": m, "k": k, "n": n, "requested": requested, "strategy": strategy,
            "kernel": strategy + "_k", "status": "ok", "verified": verified, "total": False,
            "ms": ms}


def write(d, name, rows, table="tuning file /x/tune.json (2 rows)"):
    doc = {"header": {"auto_table": table, "cpu": "c", "device": "d", "threads": 2,
                      "caches": "hot", "command_line": "qmm bench"}, "rows": rows}
    with open(os.path.join(d, name), "w") as f:
        json.dump(doc, f)


def confirm_rounds(cdir, times):
    """confirm/rR-STRATEGY-q4_0-64x256-n1.json for R = 1.. : times = [{strategy: ms} per round];
    the folder's earlier round files are removed first (its `rounds` file is kept)."""
    os.makedirs(cdir, exist_ok=True)
    for f in os.listdir(cdir):
        if f.startswith("r") and f.endswith(".json"):
            os.remove(os.path.join(cdir, f))
    for i, per in enumerate(times, 1):
        for strat, ms in per.items():
            write(cdir, f"r{i}-{strat}-q4_0-64x256-n1.json", [row(strat, strat, ms)])


def run(d, *args):
    p = subprocess.run([sys.executable, SCRIPT, *args, d], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


with tempfile.TemporaryDirectory() as d:
    # auto picked int8, the fastest: no miss
    write(d, "sweep.json", [row("auto", "int8", 1.0), row("gemv", "gemv", 1.5),
                            row("int8", "int8", 1.0), row("fused", "fused", 2.0)])
    write(d, "blas.json", [row("dequant_sgemm", "dequant_sgemm", 3.0)])
    rc, out = run(d)
    check(rc == 0 and "**0 miss(es)** over 1 points" in out, "the fastest pick passes\n" + out)

    # auto picked gemv, 1.5x the forced int8: a miss against auto's candidates
    write(d, "sweep.json", [row("auto", "gemv", 1.4), row("gemv", "gemv", 1.5),
                            row("int8", "int8", 1.0), row("fused", "fused", 2.0)])
    rc, out = run(d)
    check(rc == 1 and "q4_0 64x256 n=1: auto gemv" in out and "1.50x" in out and
          "1 against auto's candidates" in out, "a slower pick is a miss\n" + out)
    rc, out = run(d, "--slack", "1.6")
    check(rc == 0, "within a larger slack it is not\n" + out)

    # only dequant_sgemm (which auto never takes) is faster
    write(d, "sweep.json", [row("auto", "int8", 1.0), row("int8", "int8", 1.0),
                            row("fused", "fused", 2.0)])
    write(d, "blas.json", [row("dequant_sgemm", "dequant_sgemm", 0.5)])
    rc, out = run(d)
    check(rc == 1 and "1 only against a path auto does not take" in out,
          "a miss against dequant_sgemm alone is named as such\n" + out)

    # a failed or unverified faster row does not count, and fails the check
    for status in ("FAIL", "unverified"):
        bad = row("dequant_sgemm", "dequant_sgemm", 0.5, verified=False)
        bad["status"] = status
        write(d, "blas.json", [bad])
        rc, out = run(d)
        check(rc == 1 and f"not verified ({status})" in out and "**0 miss(es)**" in out,
              f"a {status} row never counts, and fails the check\n" + out)
    # a skipped row (a strategy the type does not have) is neither
    skip = row("dequant_sgemm", "dequant_sgemm", 0.5, verified=False)
    skip["status"] = "skip"
    write(d, "blas.json", [skip])
    rc, out = run(d)
    check(rc == 0, "a skipped row is not a failure\n" + out)
    os.remove(os.path.join(d, "blas.json"))

    # auto's strategy without a forced row of its own: not checked, so not passed
    write(d, "sweep.json", [row("auto", "gemv", 1.0), row("int8", "int8", 1.0)])
    rc, out = run(d)
    check(rc == 1 and "forced gemv did not run" in out, "an unmatched auto row fails\n" + out)

    # no auto row at all
    write(d, "sweep.json", [row("int8", "int8", 1.0)])
    rc, out = run(d)
    check(rc == 1 and "nothing was checked" in out, "a sweep without auto rows fails\n" + out)

    # no tuning file: the check fails even without a miss
    write(d, "sweep.json", [row("auto", "int8", 1.0), row("int8", "int8", 1.0)],
          table="compiled-in table for avx512")
    rc, out = run(d)
    check(rc == 1 and "did not use a tuning file" in out, "a sweep without a tuning file fails\n" + out)

with tempfile.TemporaryDirectory() as d:
    rc, out = run(d)
    check(rc != 0 and "no sweep.json" in out, "an empty directory is an error\n" + out)

with tempfile.TemporaryDirectory() as d:
    # repeated sweeps: the median over runs decides (one outlier run does not make a miss)
    write(d, "sweep1.json", [row("auto", "int8", 1.0), row("int8", "int8", 1.0), row("gemv", "gemv", 1.2)])
    write(d, "sweep2.json", [row("auto", "int8", 1.0), row("int8", "int8", 9.0), row("gemv", "gemv", 1.2)])
    write(d, "sweep3.json", [row("auto", "int8", 1.0), row("int8", "int8", 1.05), row("gemv", "gemv", 1.2)])
    rc, out = run(d)
    check(rc == 0 and "3 file(s)" in out, "repeated sweeps are judged by the median\n" + out)

with tempfile.TemporaryDirectory() as d:
    # a miss of the sweep, then timed again head to head (confirm/rR-STRATEGY-...json)
    write(d, "sweep.json", [row("auto", "gemv", 1.4), row("gemv", "gemv", 1.5),
                            row("int8", "int8", 1.0), row("fused", "fused", 2.0)])
    rc, out = run(d)
    with open(os.path.join(d, "misses.txt")) as f:
        listed = f.read()
    check(rc == 1 and listed == "q4_0 64 256 1 gemv int8\n", "the miss is listed for the confirm step\n" + listed)
    cdir = os.path.join(d, "confirm")

    def rounds(times):  # [(gemv ms, int8 ms) per round]
        confirm_rounds(cdir, [{"gemv": g, "int8": q} for g, q in times])
    rounds([(1.0, 1.0), (1.02, 1.0), (0.98, 1.0), (1.5, 1.0), (1.0, 1.01)])
    rc, out = run(d)
    check(rc == 0 and "not confirmed" in out and "**0 confirmed miss(es)** of the 1" in out,
          "a miss the head-to-head rounds do not repeat does not stand\n" + out)
    rounds([(1.3, 1.0), (1.2, 1.0), (0.9, 1.0), (1.25, 1.0), (1.4, 1.0)])
    rc, out = run(d)
    check(rc == 1 and "1.25x" in out and ": confirmed" in out and "**1 confirmed miss(es)**" in out,
          "a miss the rounds repeat stands (median of the per-round ratios)\n" + out)
    rounds([])
    write(cdir, "r1-gemv-q4_0-64x256-n1.json", [row("gemv", "gemv", 1.0)])
    rc, out = run(d)
    check(rc == 1 and "0 of ? confirm rounds, so it stands" in out, "a miss without rounds of both strategies stands\n" + out)
    rounds([(1.0, 1.0)])
    write(cdir, "r2-int8-q4_0-64x256-n1.json", [row("int8", "int8", 0.5, verified=False)])
    rc, out = run(d)
    check(rc == 1 and "confirm row not verified" in out, "an unverified confirm row fails the check\n" + out)

with tempfile.TemporaryDirectory() as d:
    # two strategies faster than the pick in the sweep: both are timed again, and the miss
    # stands when either is confirmed (here not the fastest one, a lucky outlier)
    write(d, "sweep.json", [row("auto", "gemv", 1.5), row("gemv", "gemv", 1.5),
                            row("int8", "int8", 1.0), row("fused", "fused", 1.05)])
    rc, out = run(d)
    with open(os.path.join(d, "misses.txt")) as f:
        listed = f.read()
    check(listed == "q4_0 64 256 1 gemv int8 fused\n", "every faster strategy is listed, fastest first\n" + listed)
    cdir = os.path.join(d, "confirm")
    confirm_rounds(cdir, [{"gemv": 1.5, "int8": 1.5, "fused": 1.05}] * 3)
    rc, out = run(d)
    check(rc == 1 and "against int8 head to head over 3 rounds: 1.00x" in out and
          "against fused head to head over 3 rounds: 1.43x" in out and "**1 confirmed miss(es)**" in out,
          "a miss confirmed against any faster strategy stands\n" + out)
    # fewer rounds than asked for: the miss stands
    with open(os.path.join(cdir, "rounds"), "w") as f:
        f.write("5\n")
    confirm_rounds(cdir, [{"gemv": 1.5, "int8": 1.5, "fused": 1.5}] * 3)
    rc, out = run(d)
    check(rc == 1 and "3 of 5 confirm rounds, so it stands" in out,
          "a miss with lost confirm rounds stands\n" + out)

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
