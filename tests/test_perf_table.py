"""test_perf_table.py — docs/PERF.md's generated block equals scripts/perf_table.py's output
from bench/results/*.json, and the script shows only verified rows.

Needs no build: it runs the script with the interpreter running this test.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "perf_table.py")
DOC = os.path.join(ROOT, "docs", "PERF.md")
BEGIN_PREFIX = "<!-- BEGIN perf_table.py"

failures = []


def run(*args):
    p = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


# 1. The doc in the repository is up to date with the data.
rc, out = run("--check")
check(rc == 0, "docs/PERF.md's block equals scripts/perf_table.py's output (else run it with --write)\n" + out)

with tempfile.TemporaryDirectory() as tmp:
    # 2. A changed number in the block is found.
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    b = text.find(BEGIN_PREFIX)
    check(b >= 0, "docs/PERF.md has the BEGIN marker")
    cell = text.find(" (", text.find("| ", text.find("\n|---", b)))
    changed = text[:cell - 1] + ("7" if text[cell - 1] != "7" else "8") + text[cell:]
    bad = os.path.join(tmp, "PERF.md")
    with open(bad, "w", encoding="utf-8") as f:
        f.write(changed)
    rc, out = run("--check", "--doc", bad)
    check(rc == 1 and "differs" in out, "--check fails on a doc whose block has one changed digit")

    # 3. --write restores it, outside the block nothing changes.
    rc, _ = run("--write", "--doc", bad)
    with open(bad, encoding="utf-8") as f:
        check(rc == 0 and f.read() == text, "--write puts the generated block back, the rest unchanged")

    # 4. A doc without the markers is an error, not a silent pass.
    nomark = os.path.join(tmp, "nomark.md")
    with open(nomark, "w", encoding="utf-8") as f:
        f.write("# no block\n")
    rc, out = run("--check", "--doc", nomark)
    check(rc != 0 and "marker" in out, "a doc without the marker lines is refused")

    # 5. Only verified ok rows are shown; the newest file wins; other JSON is skipped.
    res = os.path.join(tmp, "results")
    os.mkdir(res)

    def header(date):
        return {"qmm_version": "0", "date": date, "backend": "cpu", "threads": 2,
                "device": "Test CPU (isa avx2)", "command_line": f"qmm bench --json {date}.json"}

    def row(n, ms, status="ok", verified=True, strategy="gemv"):
        return {"type": "q4_0", "label": "x", "m": 64, "k": 256, "n": n, "strategy": strategy,
                "kernel": "k_" + strategy, "status": status, "total": False, "ms": ms,
                "gflops": 2 * 64 * 256 * n / (ms * 1e6), "verified": verified}

    with open(os.path.join(res, "old.json"), "w") as f:
        json.dump({"header": header("2026-01-01T00:00:00Z"),
                   "rows": [row(1, 0.123), row(2, 0.456)]}, f)
    with open(os.path.join(res, "new.json"), "w") as f:
        json.dump({"header": header("2026-02-01T00:00:00Z"),
                   "rows": [row(1, 0.111), row(2, 0.999, status="fail", verified=False),
                            row(4, 0.777, verified=False), row(8, 0.888, strategy="fused")]}, f)
    with open(os.path.join(res, "other.json"), "w") as f:
        json.dump({"machine": "not a qmm bench file", "rows": [1, 2]}, f)
    rc, out = run("--results", res)
    check(rc == 0, "the script runs on a results directory of its own")
    check("111 (" in out and "123 (" not in out, "the newest file's row replaces the older one")
    check("456 (" in out and "999" not in out, "a failed row is not shown; the older verified one stays")
    check("777" not in out, "an unverified row is not shown")
    check("888 (" in out and "k_fused" in out, "every strategy gets its own row with its kernel")
    check("not a qmm bench file" not in out, "JSON files without a bench header are skipped")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
