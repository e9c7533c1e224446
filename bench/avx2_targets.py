#!/usr/bin/env python3
"""The issue-11 AVX2 target table from the files bench/avx2_targets.sh wrote into OUTDIR.

Ratios are speeds (GFLOP/s) of qmm over the peer measured in the same run: ggml's best buffer
type (default or CPU_REPACK) for each (type, shape, n), OpenBLAS for f32. Only verified qmm
rows count. Usage: python3 bench/avx2_targets.py OUTDIR
"""
import json
import os
import re
import sys

QUANT = ["q4_0", "q4_K", "q5_K", "q6_K", "q8_0"]
FLOAT = ["f32", "f16", "bf16"]
BIG = (14336, 4096)


def qmm_rows(path):
    """(type, m, k, n) -> (gflops, ms, gbps, kernel) of the verified rows of a qmm bench JSON."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data = json.load(f)
    out = {}
    for r in data.get("rows", []):
        if r.get("status") == "ok" and r.get("verified") and not r.get("total"):
            out[(r["type"], r["m"], r["k"], r["n"])] = (r["gflops"], r["ms"], r.get("gbps"), r.get("kernel"))
    return out


def peer_rows(path):
    """(type, m, k, n) -> best GFLOP/s over buffer types and repeats of RESULT lines."""
    out = {}
    if not os.path.exists(path):
        return out
    pat = re.compile(r"RESULT .*?type=(\S+) m=(\d+) k=(\d+) n=(\d+) .*?gflops=([\d.]+)")
    with open(path) as f:
        for line in f:
            mt = pat.search(line)
            if mt:
                key = (mt.group(1), int(mt.group(2)), int(mt.group(3)), int(mt.group(4)))
                out[key] = max(out.get(key, 0.0), float(mt.group(5)))
    return out


def main():
    d = sys.argv[1]
    auto = qmm_rows(os.path.join(d, "qmm_auto.json"))
    fused = qmm_rows(os.path.join(d, "qmm_fused.json"))  # n = 512 (older runs: n = 1 too)
    fused.update(qmm_rows(os.path.join(d, "qmm_exact1.json")))  # n = 1: strategy gemv
    bi = qmm_rows(os.path.join(d, "qmm_bi.json"))
    big = qmm_rows(os.path.join(d, "qmm_big.json"))
    # the n = 1 ratio against ggml (hot W) from the hot run where there is one; the bandwidth
    # check from the cold run
    p = os.path.join(d, "qmm_big_hot.json")
    big_hot = qmm_rows(p) if os.path.exists(p) else big
    ggml = peer_rows(os.path.join(d, "ggml.txt"))
    blas = peer_rows(os.path.join(d, "openblas.txt"))
    bw = None
    p = os.path.join(d, "qmm_big.json")  # the bandwidth measured by the run the row comes from
    if os.path.exists(p):
        bw = json.load(open(p)).get("header", {}).get("mem_read_gbps")
    p = os.path.join(d, "bandwidth.txt")
    if not bw and os.path.exists(p):
        mt = re.search(r"([\d.]+) GB/s read", open(p).read())
        bw = float(mt.group(1)) if mt else None
    shapes = sorted({(m, k) for (_, m, k, _) in auto})
    lines = ["| check | type | shape | n | qmm | peer | ratio | target | |", "|---|---|---|---|---|---|---|---|---|"]
    misses = 0

    def row(check, t, m, k, n, a, b, target, unit="GFLOP/s"):
        nonlocal misses
        if a is None or b is None or b == 0:
            fmt = lambda v: "-" if v is None else "%.1f" % v
            lines.append("| %s | %s | %dx%d | %d | %s | %s | - | >= %.2f | not measured |" % (
                check, t, m, k, n, fmt(a), fmt(b), target))
            misses += 1
            return
        ratio = a / b
        ok = ratio >= target
        misses += 0 if ok else 1
        lines.append("| %s | %s | %dx%d | %d | %.1f | %.1f | %.2f | >= %.2f | %s |" % (
            check, t, m, k, n, a, b, ratio, target, "ok" if ok else "**miss**"))

    for (m, k) in shapes:
        for t in QUANT:
            g = lambda n: auto.get((t, m, k, n), (None,))[0]
            row("n=1 vs ggml", t, m, k, 1, g(1), ggml.get((t, m, k, 1)), 1.2)
            row("n=16 vs ggml", t, m, k, 16, g(16), ggml.get((t, m, k, 16)), 2.0)
            row("n=512 vs ggml", t, m, k, 512, g(512), ggml.get((t, m, k, 512)), 2.0)
        row("n=512 vs OpenBLAS", "f32", m, k, 512, auto.get(("f32", m, k, 512), (None,))[0],
            blas.get(("f32", m, k, 512)), 1.1)
        for t in ("f16", "bf16"):
            row("n=512 vs ggml", t, m, k, 512, auto.get((t, m, k, 512), (None,))[0], ggml.get((t, m, k, 512)), 1.5)
        for t in QUANT:
            for n in (1, 512):  # exact class at most 2x the int8 time: speed ratio >= 0.5
                a, f = auto.get((t, m, k, n)), fused.get((t, m, k, n))
                row("exact/int8 speed", t, m, k, n, f[0] if f else None, a[0] if a else None, 0.5)
            for n in (1, 16, 512):  # batch-invariant within 1.5x: speed ratio >= 1/1.5
                a, b = auto.get((t, m, k, n)), bi.get((t, m, k, n))
                row("batch-inv/default speed", t, m, k, n, b[0] if b else None, a[0] if a else None, 1 / 1.5)
    for t in QUANT:
        r = big.get((t, BIG[0], BIG[1], 1))
        rh = big_hot.get((t, BIG[0], BIG[1], 1))
        row("n=1 vs ggml", t, BIG[0], BIG[1], 1, rh[0] if rh else None, ggml.get((t, BIG[0], BIG[1], 1)), 1.2)
        lines.append("| n=1 GB/s vs read bandwidth | %s | %dx%d | 1 | %s | %s | %s | >= 0.85 | %s |" % (
            t, BIG[0], BIG[1], "%.1f" % r[2] if r and r[2] else "-", "%.1f" % bw if bw else "-",
            "%.2f" % (r[2] / bw) if r and r[2] and bw else "-",
            ("ok" if r[2] / bw >= 0.85 else "**miss**") if r and r[2] and bw else "not measured"))
        if not (r and r[2] and bw and r[2] / bw >= 0.85):
            misses += 1
    print("# AVX2 targets (issue 11): %s\n" % d)
    print("\n".join(lines))
    print("\n%d checks missed or not measured" % misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
