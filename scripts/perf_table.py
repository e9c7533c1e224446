#!/usr/bin/env python3
"""Print the current performance tables of docs/PERF.md from the results files.

Reads every bench/results/*.json that `qmm bench --json FILE` wrote (an object with a
"header" and "rows"; other JSON files there, such as bench/cuda_bench's, are skipped) and
prints markdown: per machine (backend, device, threads, cache state) one table of the newest verified
measurement of each (type, n, strategy, shape), and one table of the whole-model totals.
Rows that failed or were not verified are never shown. Numbers are printed as the files hold
them (rounded for display only); each table names the files and commands it comes from.

    scripts/perf_table.py                 print the generated block
    scripts/perf_table.py --write         replace the block in docs/PERF.md
    scripts/perf_table.py --check         exit 1 (with a diff) if docs/PERF.md's block differs
    options: --results DIR (default bench/results), --doc FILE (default docs/PERF.md)

The block in the doc lies between the BEGIN and END marker lines below; nothing outside them
is touched. tests/test_perf_table.py runs --check, so the doc cannot drift from the data.
"""
import argparse
import difflib
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- BEGIN perf_table.py: generated from bench/results/*.json; refresh with scripts/perf_table.py --write -->"
END = "<!-- END perf_table.py -->"


def load(results_dir):
    """(path relative to the repository, header, rows) of every qmm bench JSON file."""
    out = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        with open(path, encoding="utf-8") as f:
            try:
                d = json.load(f)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}: not valid JSON: {e}")
        if not isinstance(d, dict) or "header" not in d or "rows" not in d:
            continue
        h = d["header"]
        for key in ("backend", "device", "date", "command_line"):
            if key not in h:
                raise SystemExit(f"{path}: header lacks '{key}'")
        rel = os.path.relpath(path, ROOT) if path.startswith(ROOT) else path
        out.append((rel.replace(os.sep, "/"), h, d["rows"]))
    return out


def timing(h):
    """How the file's ms was taken (the header's own sentence; older files have none)."""
    t = h.get("timing")
    if isinstance(t, dict) and isinstance(t.get("ms"), str):
        return t["ms"]
    return f"not stated in the header (qmm {h.get('qmm_version', '?')}; docs/BENCH.md \"Timing\" describes the method)"


def machine(h):
    """What makes numbers comparable: backend, device name (without its details), threads,
    and the timing method."""
    dev = h["device"].split(" (")[0]
    if h["backend"] == "cpu":
        isa = h["device"].split("(isa ")[-1].rstrip(")") if "(isa " in h["device"] else "?"
        dev = f"{dev}, isa {isa}, {h.get('threads', '?')} threads"
    if h.get("caches") == "hot":  # qmm bench --caches hot: W reused from cache (older files: cold)
        dev = f"{dev}, hot caches"
    return (h["backend"], dev, timing(h))


def good(r):
    return r.get("status") == "ok" and r.get("verified") is True and isinstance(r.get("ms"), (int, float))


def us(ms):
    v = ms * 1000.0
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def gflops(g):
    return f"{g:.0f}" if isinstance(g, (int, float)) else "–"


def generate(results_dir):
    files = load(results_dir)
    groups = {}
    for path, h, rows in files:
        groups.setdefault(machine(h), []).append((path, h, rows))
    lines = [BEGIN, ""]
    lines.append("Cells: µs per call, GFLOP/s (2·m·k·n / time) in parentheses; the time as each table's")
    lines.append("timing line (from the files' headers) defines it. Only rows with status ok and verified against")
    lines.append("`qmm_matmul_ref` are shown; where several files of one table measured the same (type, n,")
    lines.append("strategy, shape), the newest header date wins.")
    lines.append("")
    totals = []
    for key in sorted(groups):
        entries = sorted(groups[key], key=lambda e: e[1]["date"])
        cells = {}   # (type, n, strategy) -> {(m, k): (date, row, path)}
        shapes = {}
        used = []
        for path, h, rows in entries:
            took = False
            for r in rows:
                if not good(r):
                    continue
                if r.get("total"):
                    totals.append((key, h, r, path))
                    took = True
                    continue
                rk = (r["type"], r["n"], r["strategy"])
                sk = (r["m"], r["k"])
                shapes.setdefault(sk, r.get("label", ""))
                cells.setdefault(rk, {})[sk] = (h["date"], r, path)
                took = True
            if took:
                used.append((path, h))
        if not cells:
            continue
        backend, dev, how = key
        newest = entries[-1][1]
        lines.append(f"**{backend}: {dev}** — `{newest['device']}`")
        lines.append("")
        lines.append(f"Timing: {how}.")
        lines.append("")
        srcs = sorted({p for v in cells.values() for (_, _, p) in v.values()})
        tag = {p: chr(ord("a") + i) for i, p in enumerate(srcs)}
        for p in srcs:
            h = next(hh for pp, hh in used if pp == p)
            lines.append(f"- ({tag[p]}) `{p}` ({h['date']}): `{h['command_line']}`")
        lines.append("")
        order = sorted(shapes, key=lambda s: (-s[0] * s[1], -s[0]))
        head = ["type", "n", "strategy", "kernel"] + [f"{m}x{k}" for (m, k) in order] + ["file"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for rk in sorted(cells, key=lambda t: (t[0], t[1], t[2])):
            row = cells[rk]
            kernels = []
            for sk in order:
                if sk in row:
                    kn = row[sk][1].get("kernel", "")
                    if kn and kn not in kernels:
                        kernels.append(kn)
            out = [rk[0], str(rk[1]), rk[2], " / ".join(kernels) or "–"]
            for sk in order:
                if sk in row:
                    r = row[sk][1]
                    out.append(f"{us(r['ms'])} ({gflops(r.get('gflops'))})")
                else:
                    out.append("–")
            out.append(",".join(sorted({tag[v[2]] for v in row.values()})))
            lines.append("| " + " | ".join(out) + " |")
        lines.append("")
    if totals:
        lines.append("**Whole model** (`--whole-model`: every projection GEMM of the preset once, the sum of")
        lines.append("count x median time):")
        lines.append("")
        lines.append("| backend: device | cache | type | n | strategy | GEMMs | ms (sum) | GFLOP/s | resident MiB | file |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for key, h, r, path in sorted(totals, key=lambda t: (t[0][:2], t[1].get("cache", ""), t[2]["type"], t[2]["n"])):
            res = r.get("resident_bytes")
            res = f"{res / 1048576:.0f}" if isinstance(res, (int, float)) else "–"
            lines.append(f"| {key[0]}: {key[1]} | {h.get('cache', '–')} | {r['type']} | {r['n']} | {r['strategy']} | "
                         f"{r.get('count', '–')} | {r['ms']:.3f} | {gflops(r.get('gflops'))} | {res} | `{path}` |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines) + "\n"


def split_doc(text, doc):
    b = text.find(BEGIN)
    e = text.find(END)
    if b < 0 or e < 0 or e < b:
        raise SystemExit(f"{doc}: the marker lines of the generated block are missing")
    e_end = text.index("\n", e) + 1 if "\n" in text[e:] else len(text)
    return text[:b], text[b:e_end], text[e_end:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "PERF.md"))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true")
    g.add_argument("--check", action="store_true")
    a = ap.parse_args()
    block = generate(a.results)
    if not a.write and not a.check:
        sys.stdout.write(block)
        return 0
    with open(a.doc, encoding="utf-8") as f:
        text = f.read()
    pre, old, post = split_doc(text, a.doc)
    if a.check:
        if old == block:
            return 0
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), block.splitlines(True),
                                                   a.doc + " (in the doc)", "scripts/perf_table.py (from the data)"))
        print(f"{a.doc}: the generated block differs from the results data; run scripts/perf_table.py --write")
        return 1
    with open(a.doc, "w", encoding="utf-8") as f:
        f.write(pre + block + post)
    return 0


if __name__ == "__main__":
    sys.exit(main())
