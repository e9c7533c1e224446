#!/usr/bin/env python3
"""Judge a bench/tune_check.sh run: does auto pick the fastest qmm path?

For every (type, m, k, n) of the sweep (OUTDIR/sweep.json and blas.json, or sweep1..N.json and
blas1..N.json of repeated runs: each strategy's time is then the median over the runs), the
strategy auto resolved to is looked up among the forced rows of the same point; its time over
the fastest forced strategy's is the point's ratio. A ratio above --slack is a miss. Only
verified rows count. Exit status 1 on a miss, on a row that ran but was not verified (FAIL,
unverified), on a point whose forced row of auto's strategy did not run, when no auto row was
checked, or when the sweep's header does not name a tuning file.

The sweep screens: its points are timed once per sweep, next to three other strategies in
one process, so on a machine whose run-to-run spread is near the slack some points miss in
one sweep and not the next. Every miss of the screen is written to OUTDIR/misses.txt (one
line: type m k n auto's-strategy, then every strategy it was more than --slack slower than,
fastest first) for bench/tune_confirm.sh to time again head to head:
OUTDIR/confirm/rR-STRATEGY-TYPE-MxK-nN.json, one `qmm bench` process per strategy and round R,
the order rotating between rounds, and OUTDIR/confirm/rounds the number of rounds asked for.
Where OUTDIR/confirm/ exists, a miss of the screen stands when, against one of those
strategies, the median over the rounds of (auto's strategy's time / its time, both from round
R) is above --slack, or when fewer rounds than asked hold both; a confirm row that failed
verification fails the check.

Usage: python3 bench/tune_check.py [--slack 1.10] OUTDIR
"""
import argparse
import glob
import json
import lzma
import os
import re
import statistics
import sys

AUTO_CANDIDATES = ("gemv", "int8", "fused")  # what a CPU row chooses between


def load(outdir):
    def find(pattern):  # NAME.json, or NAME.json.xz as checked in under bench/results
        return sorted(glob.glob(os.path.join(outdir, pattern + ".json")) +
                      glob.glob(os.path.join(outdir, pattern + ".json.xz")))
    if find("sweep[0-9]*"):  # repeated sweeps (REPEATS=N): sweep1..N with blas1..N
        files = find("sweep[0-9]*") + find("blas[0-9]*")
    else:
        files = find("sweep") + find("blas")
    if not find("sweep[0-9]*") and not find("sweep"):
        sys.exit(f"tune_check.py: no sweep.json or sweep1.json (or .json.xz) in {outdir}")
    runs = []
    for f in files:
        with (lzma.open(f, "rt") if f.endswith(".xz") else open(f)) as fh:
            runs.append(json.load(fh))
    return files, runs


def load_confirm(outdir):
    """OUTDIR/confirm/rR-*.json -> ({(type, m, k, n): {R: {strategy: ms}}}, failures)."""
    d = os.path.join(outdir, "confirm")
    if not os.path.isdir(d):
        return None, []
    rounds, failed = {}, []
    for f in sorted(glob.glob(os.path.join(d, "r*.json")) + glob.glob(os.path.join(d, "r*.json.xz"))):
        mt = re.match(r"r(\d+)-", os.path.basename(f))
        if not mt:
            continue
        with (lzma.open(f, "rt") if f.endswith(".xz") else open(f)) as fh:
            run = json.load(fh)
        for r in run["rows"]:
            if r.get("total"):
                continue
            key = (r["type"], r["m"], r["k"], r["n"])
            if r.get("status") != "ok" or r.get("verified") is not True:
                st = r.get("status") if r.get("status") != "ok" else "unverified"
                failed.append((key, r.get("strategy"), st, os.path.basename(f)))
                continue
            rounds.setdefault(key, {}).setdefault(int(mt.group(1)), {})[r["strategy"]] = r["ms"]
    return rounds, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slack", type=float, default=1.10)
    ap.add_argument("outdir")
    a = ap.parse_args()
    files, runs = load(a.outdir)
    header = runs[0]["header"]
    times = {}  # (type, m, k, n) -> strategy -> [ms per run]
    auto = {}  # (type, m, k, n) -> [(strategy, kernel, ms) per run]
    failed = []
    for run in runs:
        for r in run["rows"]:
            if r.get("total"):
                continue
            key = (r["type"], r["m"], r["k"], r["n"])
            ok = r.get("status") == "ok" and r.get("verified") is True
            if not ok and r.get("status") != "skip":  # FAIL, unverified: never counted
                failed.append((key, r.get("strategy"), r.get("status"), r.get("note", "")))
            if not ok:
                continue
            if r.get("requested") == "auto":
                auto.setdefault(key, []).append((r["strategy"], r["kernel"], r["ms"]))
            else:
                times.setdefault(key, {}).setdefault(r["strategy"], []).append(r["ms"])
    out = []
    table = header.get("auto_table", "")
    out.append(f"# auto against the fastest qmm path ({len(files)} file(s): "
               f"{', '.join(os.path.basename(f) for f in files)})")
    out.append("")
    out.append(f"- cpu: {header.get('cpu')}; device: {header.get('device')}; "
               f"threads: {header.get('threads')}; caches: {header.get('caches')}")
    out.append(f"- auto: {table}")
    out.append(f"- command: `{header.get('command_line')}`")
    tune_s = os.path.join(a.outdir, "tune_seconds")
    if os.path.exists(tune_s):
        out.append(f"- qmm tune took {open(tune_s).read().strip()} s")
    out.append(f"- a miss: the strategy auto picked is more than {a.slack:.2f}x the fastest")
    out.append("")
    misses, unmatched, worst = [], [], {}
    for key in sorted(auto):
        strat = auto[key][0][0]
        kern = auto[key][0][1]
        med = {s: statistics.median(v) for s, v in times.get(key, {}).items()}
        if not med:
            unmatched.append((key, strat, "no forced row ran"))
            continue
        best_s = min(med, key=med.get)
        cand = {s: v for s, v in med.items() if s in AUTO_CANDIDATES}
        if strat not in med:
            unmatched.append((key, strat, f"forced {strat} did not run"))
            continue
        ratio = med[strat] / med[best_s]
        t = key[0]
        if t not in worst or ratio > worst[t][0]:
            worst[t] = (ratio, key, strat, best_s)
        if ratio > a.slack:
            # against auto's own candidates, or only against a path auto never takes
            within = bool(cand) and med[strat] / min(cand.values()) <= a.slack
            # every strategy the pick is more than --slack slower than, fastest first
            rivals = sorted((x for x in med if x != strat and med[strat] / med[x] > a.slack),
                            key=med.get)
            misses.append((key, strat, kern, med[strat], best_s, med[best_s], ratio, within,
                           rivals))
    out.append("| type | points | worst ratio | at (m x k, n) | auto picked | fastest |")
    out.append("|---|---|---|---|---|---|")
    npts = {}
    for key in auto:
        npts[key[0]] = npts.get(key[0], 0) + 1
    for t in sorted(worst):
        r, key, s, b = worst[t]
        out.append(f"| {t} | {npts[t]} | {r:.3f} | {key[1]}x{key[2]}, {key[3]} | {s} | {b} |")
    out.append("")
    n_within = sum(1 for m in misses if m[7])
    out.append(f"**{len(misses)} miss(es)** over {len(auto)} points: {len(misses) - n_within} "
               f"against auto's candidates ({', '.join(AUTO_CANDIDATES)}), {n_within} only "
               f"against a path auto does not take (dequant_sgemm).")
    with open(os.path.join(a.outdir, "misses.txt"), "w") as fh:
        for key, s, kern, ms, b, bms, ratio, within, rivals in misses:
            fh.write(f"{key[0]} {key[1]} {key[2]} {key[3]} {s} {' '.join(rivals)}\n")
    confirm, confirm_failed = load_confirm(a.outdir)
    asked = None  # rounds the confirm step was asked for (confirm/rounds)
    if confirm is not None and os.path.exists(os.path.join(a.outdir, "confirm", "rounds")):
        asked = int(open(os.path.join(a.outdir, "confirm", "rounds")).read().strip())
    standing = 0
    for key, s, kern, ms, b, bms, ratio, within, rivals in misses:
        line = (f"- {key[0]} {key[1]}x{key[2]} n={key[3]}: auto {s} ({kern}) {ms:.4f} ms, "
                f"{b} {bms:.4f} ms: {ratio:.2f}x")
        if confirm is None:
            standing += 1
            out.append(line)
            continue
        # against each strategy the sweep found it slower than: the miss stands when one of
        # them is confirmed, or when a rival lacks rounds (fewer than asked for: a lost round
        # must not leave the verdict to the rest)
        rs = confirm.get(key, {})
        stands = False
        for x in rivals:
            pairs = [(rs[r][s], rs[r][x]) for r in sorted(rs) if s in rs[r] and x in rs[r]]
            if not pairs or (asked is not None and len(pairs) < asked):
                stands = True
                line += (f"; against {x}: {len(pairs)} of {asked if asked is not None else '?'} "
                         f"confirm rounds, so it stands")
                continue
            per = [p / q for p, q in pairs]
            cr = statistics.median(per)
            stands = stands or cr > a.slack
            line += (f"; against {x} head to head over {len(pairs)} rounds: {cr:.2f}x (rounds "
                     f"{' '.join(f'{v:.2f}' for v in per)}): "
                     f"{'confirmed' if cr > a.slack else 'not confirmed'}")
        standing += stands
        out.append(line)
    if confirm is not None:
        out.append("")
        out.append(f"**{standing} confirmed miss(es)** of the {len(misses)} in the sweep "
                   f"(each timed again head to head, confirm/)")
        for key, s, status, f in confirm_failed:
            out.append(f"- confirm row not verified ({status}): {key} {s} ({f})")
    for key, s, why in unmatched:
        out.append(f"- {key[0]} {key[1]}x{key[2]} n={key[3]}: auto {s}: {why}")
    for key, s, status, note in failed:
        out.append(f"- not verified ({status}): {key} {s} {note}")
    ok = (table.startswith("tuning file") and auto and not standing and not failed and
          not unmatched and not confirm_failed)
    if not auto:
        out.append("- no verified auto row: nothing was checked")
    if not table.startswith("tuning file"):
        out.append("- the sweep's auto did not use a tuning file")
    print("\n".join(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
