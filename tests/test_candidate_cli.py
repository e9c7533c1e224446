"""test_candidate_cli.py — `qmm bench --candidate FILE.cu` (docs/BENCH.md "Candidate kernels").

Without a GPU: the errors that need none (bad geometry flags and environment values, bad
--tolerance, options that do not apply, a missing file, a candidate that does not compile:
NVRTC's log is printed) and that the two shipped candidates compile (NVRTC runs without a
GPU). With a GPU: bench/candidates/gemv_copy.cu passes bit-identical on every type with m and
k tails and several n, gemv_wrong.cu fails with and without --tolerance, a candidate writing
NaN fails even with a huge --tolerance, a serial-order kernel passes only within a tolerance,
undeclared geometries and malformed declarations are refused before anything runs, the
environment picks a declared geometry, and --json writes the rows.

Exit: 0 when the checks ran (the GPU part prints "GPU part skipped" without a device),
77 when the tool was built without CUDA (after checking the usage errors and its message).
"""
import json
import os
import subprocess
import sys
import tempfile

QMM = os.environ.get("QMM_BIN")
SRC = os.environ.get("QMM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
COPY = os.path.join(SRC, "bench", "candidates", "gemv_copy.cu")
WRONG = os.path.join(SRC, "bench", "candidates", "gemv_wrong.cu")
failures = []


def run(args, env_extra=None, timeout=600):
    env = dict(os.environ)
    for var in ("QMM_CANDIDATE_ROWS_PER_BLOCK", "QMM_CANDIDATE_THREADS", "ITERS", "ONLY",
                "QMM_STRATEGY"):
        env.pop(var, None)
    env.update(env_extra or {})
    p = subprocess.run([QMM, "bench"] + args, capture_output=True, text=True, env=env,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check(name, cond, detail=""):
    if cond:
        print("ok   " + name)
    else:
        print("FAIL " + name + (": " + detail if detail else ""))
        failures.append(name)


def expect(name, args, rc, needle, env=None, stream="stderr"):
    got_rc, out, err = run(args, env)
    text = err if stream == "stderr" else out
    check(name, got_rc == rc and needle in text,
          "rc %d (want %d), looked for %r in:\n%s%s" % (got_rc, rc, needle, out[-3000:], err[-3000:]))
    return got_rc, out, err


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


SIG = ("extern \"C\" __global__ void qmm_candidate(const uint8_t *w, size_t row_bytes, int64_t m, "
       "int64_t k, int64_t n, const float *x, int64_t ldx, float *y, int64_t ldy)")
GEOM = "extern \"C\" __device__ const int qmm_candidate_geometry[][2] = {{8, 256}};\n"
# Every output NaN (covers all rows and tokens, so only the non-finite rule can fail it).
NAN_KERNEL = "#include <stdint.h>\n#include <stddef.h>\n" + GEOM + SIG + """ {
    const int64_t r = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    if (r >= m || (threadIdx.x & 31) != 0) return;
    for (int64_t t = blockIdx.y; t < n; t += gridDim.y) y[t * ldy + r] = __int_as_float(0x7FC00000);
}
"""
# A correct gemv in another order (one thread per row, sequential sum): right within a
# tolerance, not bit for bit.
SERIAL_KERNEL = "#include \"cuda/dequant.cuh\"\n" + GEOM + SIG + """ {
    const int64_t r = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    if (r >= m || (threadIdx.x & 31) != 0) return;
    for (int64_t t = blockIdx.y; t < n; t += gridDim.y) {
        float acc = 0.0f;
        for (int64_t e = 0; e < k; e++)
            acc = fmaf(qmm_cuda_dequant<QMM_CANDIDATE_TYPE>(w + r * row_bytes, e), x[t * ldx + e], acc);
        y[t * ldy + r] = acc;
    }
}
"""


def no_gpu_checks(tmp):
    """Errors found before any GPU work: every build gives them."""
    expect("missing file", ["--candidate", os.path.join(tmp, "nope.cu")], 1, "cannot open")
    expect("no file name", ["--candidate"], 2, "needs a value")
    expect("rows-per-block 0", ["--candidate", COPY, "--rows-per-block", "0"], 2, "--rows-per-block")
    expect("rows-per-block text", ["--candidate", COPY, "--rows-per-block", "8x"], 2, "not an integer")
    expect("rows-per-block huge", ["--candidate", COPY, "--rows-per-block", "4096"], 2, "out of range")
    expect("threads not warps", ["--candidate", COPY, "--block-threads", "48"], 2, "multiple of 32")
    expect("threads too many", ["--candidate", COPY, "--block-threads", "2048"], 2, "out of range")
    expect("env threads not warps", ["--candidate", COPY], 2, "QMM_CANDIDATE_THREADS",
           env={"QMM_CANDIDATE_THREADS": "100"})
    expect("env threads space", ["--candidate", COPY], 2, "QMM_CANDIDATE_THREADS",
           env={"QMM_CANDIDATE_THREADS": " 64"})
    expect("env rows empty", ["--candidate", COPY], 2, "QMM_CANDIDATE_ROWS_PER_BLOCK",
           env={"QMM_CANDIDATE_ROWS_PER_BLOCK": ""})
    expect("env rows text", ["--candidate", COPY], 2, "QMM_CANDIDATE_ROWS_PER_BLOCK",
           env={"QMM_CANDIDATE_ROWS_PER_BLOCK": "eight"})
    for bad in ("-1", "nan", "inf", "1e-3x", "", "+1"):
        expect("tolerance %r" % bad, ["--candidate", COPY, "--tolerance", bad], 2, "--tolerance")
    expect("strategy refused", ["--candidate", COPY, "--strategy", "gemv"], 2, "does not apply")
    expect("cpu backend refused", ["--candidate", COPY, "--backend", "cpu"], 2, "the CUDA or the WebGPU backend")
    expect("bad shape", ["--candidate", COPY, "--shape", "64x100", "--types", "q4_0"], 2,
           "not a multiple of the block size")
    expect("help", ["--candidate", COPY, "--help"], 0, "qmm_candidate_geometry", stream="stdout")


def main():
    if not QMM or not os.path.exists(QMM):
        print("QMM_BIN is not set or missing: the qmm tool was not built")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        no_gpu_checks(tmp)
        rc, out, err = run(["--candidate", COPY, "--types", "q4_0", "--shape", "64x256"])
        if "built without CUDA" in err:
            check("built without CUDA: exit 1", rc == 1, err)
            print("GPU part skipped: this qmm was built without CUDA")
            return 1 if failures else 77

        # NVRTC runs without a GPU: a compile error shows the log, the shipped files compile.
        broken = write(tmp, "broken.cu", "#include \"cuda/dequant.cuh\"\n" + SIG + " { this is not C++; }\n")
        expect("compile error prints the NVRTC log", ["--candidate", broken, "--types", "q4_0"],
               1, "NVRTC log")
        _, _, err2 = run(["--candidate", broken, "--types", "q4_0"])
        check("compile log names the file", "broken.cu" in err2 and "error" in err2, err2[-2000:])
        has_gpu = "no CUDA device" not in err
        if not has_gpu:
            check("gemv_copy.cu compiles for every type", rc == 1 and "compiles" in err, err[-2000:])
            rcw, _, errw = run(["--candidate", WRONG])
            check("gemv_wrong.cu compiles for every type", rcw == 1 and "compiles" in errw, errw[-2000:])
            print("GPU part skipped: no CUDA device (%s)" % err.strip().splitlines()[-1])
            return 1 if failures else 0

        quick = ["--iters", "3", "--warmup", "1"]
        # Every type, m tails (1001 rows, m < rows per block), k tails of the float types.
        rc, out, err = expect("gemv_copy.cu bit-identical, every type",
                              ["--candidate", COPY, "--shape", "1001x1024,5x4608,64x256",
                               "--n", "1,3,8,9"] + quick, 0, "bit-identical", stream="stdout")
        rows = [l for l in out.splitlines() if " PASS " in l or " FAIL " in l]
        # every weight type of the type table (13 before the unit-codec types, more with them)
        check("gemv_copy.cu: every type x 3 shapes x 4 n rows, all PASS",
              len(rows) % (3 * 4) == 0 and len(rows) >= 13 * 3 * 4 and all(" PASS " in l for l in rows),
              out[-3000:])
        expect("gemv_copy.cu float k tail", ["--candidate", COPY, "--types", "f32,f16,bf16",
               "--shape", "33x1001", "--n", "2"] + quick, 0, "bit-identical", stream="stdout")
        expect("declared geometry by flags", ["--candidate", COPY, "--types", "q4_K",
               "--shape", "1001x1024", "--rows-per-block", "4", "--block-threads", "128"] + quick,
               0, "bit-identical", stream="stdout")
        rc, out, _ = expect("declared geometry by env", ["--candidate", COPY, "--types", "q4_K",
                            "--shape", "1001x1024"] + quick, 0, "bit-identical",
                            env={"QMM_CANDIDATE_THREADS": "64"}, stream="stdout")
        check("env geometry used", any(l.split()[3:5] == ["2", "64"] for l in out.splitlines()
                                       if " PASS " in l), out[-2000:])
        expect("undeclared geometry refused", ["--candidate", COPY, "--types", "q4_0",
               "--rows-per-block", "8", "--block-threads", "128"] + quick, 2, "does not support")
        expect("flag replaces env", ["--candidate", COPY, "--types", "q4_0", "--shape", "64x256",
               "--block-threads", "256"] + quick, 0, "bit-identical",
               env={"QMM_CANDIDATE_THREADS": "64", "QMM_CANDIDATE_ROWS_PER_BLOCK": "8"},
               stream="stdout")

        expect("gemv_wrong.cu fails", ["--candidate", WRONG, "--types", "q4_0,q6_K",
               "--shape", "256x1024", "--n", "1,4"] + quick, 1, "FAIL", stream="stdout")
        # 1e-5: far above the rounding of another summation order (~1e-7 here), far below
        # the missing term w[k-1]*x[k-1] relative to max|y| (~1e-2 for 4 tokens of normal X).
        expect("gemv_wrong.cu fails within a tolerance", ["--candidate", WRONG, "--types", "q8_0",
               "--shape", "256x1024", "--n", "4", "--tolerance", "1e-5"] + quick, 1,
               "> tolerance", stream="stdout")
        nan = write(tmp, "nan.cu", NAN_KERNEL)
        expect("NaN fails even with --tolerance", ["--candidate", nan, "--types", "q4_0",
               "--shape", "64x256", "--tolerance", "1e30"] + quick, 1, "non-finite", stream="stdout")
        serial = write(tmp, "serial.cu", SERIAL_KERNEL)
        expect("another order passes within a tolerance", ["--candidate", serial, "--types",
               "q4_K", "--shape", "64x1024", "--tolerance", "1e-4"] + quick, 0, "PASS",
               stream="stdout")

        nogeom = write(tmp, "nogeom.cu", "#include <stdint.h>\n#include <stddef.h>\n" + SIG + " {}\n")
        expect("no geometry declared", ["--candidate", nogeom, "--types", "q4_0"], 1,
               "declares no geometry")
        badgeom = write(tmp, "badgeom.cu", "#include <stdint.h>\n#include <stddef.h>\n"
                        "extern \"C\" __device__ const int qmm_candidate_geometry[][2] = {{8, 100}};\n"
                        + SIG + " {}\n")
        expect("malformed geometry", ["--candidate", badgeom, "--types", "q4_0"], 1,
               "multiple of 32")
        nokernel = write(tmp, "nokernel.cu", "#include <stdint.h>\n" + GEOM +
                         "extern \"C\" __global__ void other(float *y) { y[0] = 1; }\n")
        expect("no qmm_candidate kernel", ["--candidate", nokernel, "--types", "q4_0"], 1,
               "has no kernel qmm_candidate")

        jpath = os.path.join(tmp, "out.json")
        rc, _, err = run(["--candidate", COPY, "--types", "q4_0,q4_K", "--shape", "64x256",
                          "--json", jpath] + quick)
        try:
            with open(jpath) as f:
                doc = json.load(f)
            ok = rc == 0 and len(doc["rows"]) == 2 and all(
                r["status"] == "PASS" and r["mismatches"] == 0 and r["candidate_us"] > 0
                for r in doc["rows"])
            check("--json rows", ok, json.dumps(doc)[:2000])
        except (OSError, ValueError, KeyError) as e:
            check("--json rows", False, "%s %s" % (e, err[-2000:]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
