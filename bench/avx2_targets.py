#!/usr/bin/env python3
"""The issue-11 AVX2 target table from the files bench/avx2_targets.sh wrote into OUTDIR.

Ratios are speeds (GFLOP/s) of qmm over the peer measured in the same run: ggml's best buffer
type (default or CPU_REPACK) for each (type, shape, n), OpenBLAS for f32. Only verified qmm
rows count. Usage: python3 bench/avx2_targets.py OUTDIR [OUTDIR ...]; with several (repeated
runs, REPEATS in bench/avx2_targets.sh) each check shows its ratio in every run and is judged by
the median ratio.
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


def checks(d):
    """Every target check of one run directory: a list of (check, type, m, k, n, qmm, peer,
    target) with qmm / peer the two speeds (GB/s for the bandwidth check; None: not measured)."""
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
    out = []
    first = lambda v: v[0] if v else None
    for (m, k) in shapes:
        for t in QUANT:
            for n, target in ((1, 1.2), (16, 2.0), (512, 2.0)):
                out.append(("n=%d vs ggml" % n, t, m, k, n, first(auto.get((t, m, k, n))),
                            ggml.get((t, m, k, n)), target))
        out.append(("n=512 vs OpenBLAS", "f32", m, k, 512, first(auto.get(("f32", m, k, 512))),
                    blas.get(("f32", m, k, 512)), 1.1))
        for t in ("f16", "bf16"):
            out.append(("n=512 vs ggml", t, m, k, 512, first(auto.get((t, m, k, 512))),
                        ggml.get((t, m, k, 512)), 1.5))
        for t in QUANT:
            for n in (1, 512):  # exact class at most 2x the int8 time: speed ratio >= 0.5
                out.append(("exact/int8 speed", t, m, k, n, first(fused.get((t, m, k, n))),
                            first(auto.get((t, m, k, n))), 0.5))
            for n in (1, 16, 512):  # batch-invariant within 1.5x: speed ratio >= 1/1.5
                out.append(("batch-inv/default speed", t, m, k, n, first(bi.get((t, m, k, n))),
                            first(auto.get((t, m, k, n))), 1 / 1.5))
    for t in QUANT:
        out.append(("n=1 vs ggml", t, BIG[0], BIG[1], 1, first(big_hot.get((t, BIG[0], BIG[1], 1))),
                    ggml.get((t, BIG[0], BIG[1], 1)), 1.2))
        r = big.get((t, BIG[0], BIG[1], 1))
        out.append(("n=1 GB/s vs read bandwidth", t, BIG[0], BIG[1], 1, r[2] if r and r[2] else None,
                    bw, 0.85))
    return out


def main():
    dirs = sys.argv[1:]
    if not dirs:
        print("usage: avx2_targets.py OUTDIR [OUTDIR ...] (several: repeated runs, median ratio)")
        return 2
    runs = [checks(d) for d in dirs]
    fmt = lambda v: "-" if v is None else "%.1f" % v
    misses = 0
    if len(runs) == 1:
        lines = ["| check | type | shape | n | qmm | peer | ratio | target | |",
                 "|---|---|---|---|---|---|---|---|---|"]
    else:
        lines = ["| check | type | shape | n | ratio per run | median | target | |",
                 "|---|---|---|---|---|---|---|---|"]
    for i, c in enumerate(runs[0]):
        check, t, m, k, n, a, b, target = c
        ratios = []
        for run in runs:
            ra, rb = run[i][5], run[i][6]
            ratios.append(ra / rb if ra is not None and rb else None)
        got = sorted(r for r in ratios if r is not None)
        if len(got) < len(ratios) or not got:
            misses += 1
            if len(runs) == 1:
                lines.append("| %s | %s | %dx%d | %d | %s | %s | - | >= %.2f | not measured |" % (
                    check, t, m, k, n, fmt(a), fmt(b), target))
            else:
                lines.append("| %s | %s | %dx%d | %d | %s | - | >= %.2f | not measured in every run |" % (
                    check, t, m, k, n, " ".join("-" if r is None else "%.2f" % r for r in ratios), target))
            continue
        med = got[len(got) // 2] if len(got) % 2 else 0.5 * (got[len(got) // 2 - 1] + got[len(got) // 2])
        ok = med >= target
        misses += 0 if ok else 1
        if len(runs) == 1:
            lines.append("| %s | %s | %dx%d | %d | %s | %s | %.2f | >= %.2f | %s |" % (
                check, t, m, k, n, fmt(a), fmt(b), med, target, "ok" if ok else "**miss**"))
        else:
            lines.append("| %s | %s | %dx%d | %d | %s | %.2f | >= %.2f | %s |" % (
                check, t, m, k, n, " ".join("%.2f" % r for r in ratios), med, target,
                "ok" if ok else "**miss**"))
    print("# AVX2 targets (issue 11): %s\n" % " ".join(dirs))
    print("\n".join(lines))
    print("\n%d checks missed or not measured" % misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
