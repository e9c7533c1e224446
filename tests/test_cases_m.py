#!/usr/bin/env python3
"""test_cases_m.py — CASES.md M (benchmark mistakes) through `QMM_BIN bench`.

The bench cannot be told to make zero inputs (--fill is quantized|bytes, both random), so
the all-zero case goes through `--model FILE.gguf`, whose weights are the file's bytes:
  - a GGUF whose only 2-D tensor is all zero bytes (q4_0: d = 0): the bench must refuse the
    row ("all-zero"), exit 1, and print no speed for it;
  - control: the same file with random finite weights passes (exit 0) and prints checksums,
    so the refusal above is not a generic failure.
Not testable from outside (docs/TRUST.md): all-zero activations (the bench makes X itself),
timing without sync, cache residency, first-run effects.
Env: QMM_BIN (skipped without it). Exit 0 pass, 1 fail, 77 skipped.
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gguf_corpus"))
import make_corpus  # noqa: E402


def bench(qmm_bin, path):
    return subprocess.run([qmm_bin, "bench", "--model", path, "--n", "1", "--iters", "1",
                           "--warmup", "0", "--threads", "1"],
                          capture_output=True, text=True, timeout=300)


def main():
    qmm_bin = os.environ.get("QMM_BIN")
    if not qmm_bin or not os.path.exists(qmm_bin):
        print("skipped: QMM_BIN not set")
        return 77
    failures = []
    e = make_corpus.Endian()
    kvs = [e.kv("general.architecture", make_corpus.T_STR, "llama")]
    with tempfile.TemporaryDirectory() as tmp:
        zero = os.path.join(tmp, "zero.gguf")
        rows, k = 64, 256
        nbytes = rows * (k // 32) * 18
        with open(zero, "wb") as f:
            f.write(make_corpus.build([("blk.0.ffn_up.weight", "q4_0", [k, rows])], kvs=kvs,
                                      data_override=b"\0" * nbytes))
        good = os.path.join(tmp, "good.gguf")
        with open(good, "wb") as f:
            f.write(make_corpus.build([("blk.0.ffn_up.weight", "q4_0", [k, rows])], kvs=kvs))

        p = bench(qmm_bin, zero)
        out = p.stdout + p.stderr
        print(f"[M] all-zero weights: exit {p.returncode}\n{out.strip()[-600:]}")
        if p.returncode < 0:
            failures.append(f"bench killed by signal {-p.returncode} on all-zero weights")
        elif p.returncode != 1:
            failures.append(f"bench exit {p.returncode} on all-zero weights, expected 1")
        if "all-zero" not in out:
            failures.append("bench did not say it refused all-zero weights")

        p = bench(qmm_bin, good)
        out = p.stdout + p.stderr
        print(f"[M] control (random weights): exit {p.returncode}\n{out.strip()[-600:]}")
        if p.returncode != 0:
            failures.append(f"bench exit {p.returncode} on a valid random-weights file")
        if "all-zero" in out:
            failures.append("bench refused random weights as all-zero")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
