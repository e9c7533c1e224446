#!/usr/bin/env python3
"""test_webgpu_candidate.py — `qmm bench --backend webgpu` and `qmm bench --candidate FILE.wgsl`
(docs/BENCH.md "Candidate kernels", docs/WEBGPU.md).

Usage errors first (strict geometry: TILE_M/TILE_N other than 4, bad WG_M/WG_N/TILE_K values
from flags and environment, geometries the kernel or the adapter cannot run, flags of the other
backend). Then the candidate diff on the production kernels:
  - src/webgpu/wgsl/fused.wgsl and gemv.wgsl themselves pass bit-identical on every type the
    backend has, with m, n and k tails and several column tiles (m > 64);
  - planted wrong candidates made from fused.wgsl by one substitution each (the test checks
    the substitution applied, so an edit of fused.wgsl cannot silently disarm it) fail:
      part_tile:  token 3 of every thread tile gets token 2's sums (computes 3/4 of the tile);
      tile_map:   every column tile after the first reads the first tile's W rows;
      no_store:   token 3 of every thread tile is never stored (the NaN poison stays);
    part_tile and tile_map stay finite, so only the whole-output bit comparison catches them,
    and they fail with a --tolerance too; no_store fails on the non-finite rule;
  - a candidate that rounds differently (one update added in two halves) passes only within
    a tolerance;
  - a WGSL error prints wgpu's message with the line and column in the candidate file;
    a candidate with a binding the production layout lacks fails cleanly (exit 1);
  - the geometry from flags and from the environment reaches the kernel (bit-identical at
    another geometry: each output sums over k in order), --json writes the rows.
With --shader-checks (wgpu's runtime checks on both kernels) gemv.wgsl and fused.wgsl still
pass bit-identical, float k tails included. And `qmm bench --backend webgpu` on two types
prints the adapter header and verified rows, says whether the shaders ran trusted (the
default) or with --shader-checks, and --shader-checks is refused on the CPU.

Exit 77 when the tool has no WebGPU backend or the machine no Vulkan adapter (lavapipe:
apt-get install mesa-vulkan-drivers libvulkan1).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

QMM = os.environ.get("QMM_BIN")
SRC = os.environ.get("QMM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
FUSED = os.path.join(SRC, "src", "webgpu", "wgsl", "fused.wgsl")
GEMV = os.path.join(SRC, "src", "webgpu", "wgsl", "gemv.wgsl")
failures = []
QUICK = ["--iters", "1", "--warmup", "0"]
ENV_VARS = ("WG_M", "WG_N", "TILE_K", "TILE_M", "TILE_N", "ITERS", "ONLY", "QMM_STRATEGY",
            "QMM_CANDIDATE_ROWS_PER_BLOCK", "QMM_CANDIDATE_THREADS")


def run(args, env_extra=None, timeout=900):
    env = dict(os.environ)
    for var in ENV_VARS:
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


def planted(tmp, name, text, old, new):
    """fused.wgsl with one substitution that must apply exactly once."""
    check("plant %s applies" % name, text.count(old) == 1, "%r found %d times" % (old, text.count(old)))
    return write(tmp, name + ".wgsl", text.replace(old, new))


def usage_checks():
    c = ["--candidate", FUSED, "--types", "q4_0", "--shape", "64x256"]
    expect("TILE_M=2 refused", c, 2, "only 4 is", env={"TILE_M": "2"})
    expect("--tile-n 8 refused", c + ["--tile-n", "8"], 2, "TILE_N = 8")
    expect("TILE_M=4 accepted by the parser, WG_M=abc refused", c, 2, "environment variable WG_M",
           env={"TILE_M": "4", "WG_M": "abc"})
    expect("--wg-m 0", c + ["--wg-m", "0"], 2, "out of range")
    expect("--tile-k text", c + ["--tile-k", "32x"], 2, "not an integer")
    expect("CUDA geometry flag on a WGSL candidate", c + ["--rows-per-block", "8"], 2,
           "apply to a CUDA candidate")
    expect("WebGPU geometry flag on a CUDA candidate",
           ["--candidate", os.path.join(SRC, "bench", "candidates", "gemv_copy.cu"), "--wg-m", "8"],
           2, "apply to a WebGPU candidate")
    expect("bad --kernel", c + ["--kernel", "int8"], 2, "expected fused or gemv")
    expect("bench: --wg-m on the CPU backend", ["--types", "q4_0", "--shape", "64x256", "--wg-m", "8"],
           2, "apply to --backend webgpu only")
    expect("bench: --shader-checks on the CPU", ["--types", "q4_0", "--shape", "64x256",
           "--shader-checks"], 2, "--backend webgpu only")
    expect("bench: --tile-m 2 on webgpu", ["--backend", "webgpu", "--types", "q4_0", "--shape",
           "64x256", "--tile-m", "2"], 2, "only 4 is")


def main():
    if not QMM or not os.path.exists(QMM):
        print("QMM_BIN is not set or missing: the qmm tool was not built")
        return 77
    xdg = None
    if not os.environ.get("XDG_RUNTIME_DIR"):
        xdg = os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="qmm-xdg-")  # 0700
    try:
        return checks()
    finally:
        if xdg:
            shutil.rmtree(xdg, ignore_errors=True)


def checks():
    usage_checks()
    with open(FUSED) as f:
        fused = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run(["--candidate", FUSED, "--types", "f32", "--shape", "8x8", "--n", "1"] + QUICK)
        if "built without the WebGPU backend" in err or "adapter found" in err:
            check("no WebGPU here: exit 1", rc == 1, err)
            print("WebGPU part skipped:", err.strip().splitlines()[-1])
            return 1 if failures else 77
        check("probe run passes", rc == 0, out[-2000:] + err[-2000:])

        # geometry the kernel or the adapter cannot run: refused before anything runs
        c = ["--candidate", FUSED, "--types", "q4_0", "--shape", "64x256"] + QUICK
        expect("WG_M=3 refused by the kernel", c, 2, "WG_M = 3", env={"WG_M": "3"})
        expect("--wg-m 32 --wg-n 32 --tile-k 64: workgroup memory", c + ["--wg-m", "32", "--wg-n", "32",
               "--tile-k", "64"], 2, "bytes of workgroup memory")
        expect("bench: WG_N=64 refused", ["--backend", "webgpu", "--types", "q4_0", "--shape", "64x256"]
               + QUICK, 2, "WG_N = 64", env={"WG_N": "64"})

        # the production kernels themselves: bit-identical on every type, with tails
        rc, out, err = expect("fused.wgsl bit-identical, every type",
                              ["--candidate", FUSED, "--shape", "200x256,33x512", "--n", "1,67"] + QUICK,
                              0, "bit-identical", stream="stdout")
        rows = [l for l in out.splitlines() if " PASS " in l or " FAIL " in l]
        check("fused.wgsl: 26 types x 2 shapes x 2 n, all PASS",
              len(rows) == 26 * 4 and all(" PASS " in l for l in rows), out[-3000:])
        expect("fused.wgsl float k tail", ["--candidate", FUSED, "--types", "f32,f16,bf16", "--shape",
               "70x37", "--n", "5"] + QUICK, 0, "bit-identical", stream="stdout")
        expect("gemv.wgsl bit-identical", ["--candidate", GEMV, "--kernel", "gemv", "--types",
               "q4_0,q6_K,f16", "--shape", "67x256", "--n", "1,5"] + QUICK, 0, "bit-identical",
               stream="stdout")
        # with wgpu's runtime checks on both kernels: the same bits (a float k tail, gemv and fused)
        expect("gemv.wgsl --shader-checks", ["--candidate", GEMV, "--kernel", "gemv", "--types",
               "f32,q4_K", "--shape", "67x256", "--n", "1,5", "--shader-checks"] + QUICK, 0,
               "bit-identical", stream="stdout")
        expect("fused.wgsl --shader-checks, float k tail", ["--candidate", FUSED, "--types", "f16",
               "--shape", "70x37", "--n", "5", "--shader-checks"] + QUICK, 0, "bit-identical",
               stream="stdout")

        # planted defects: finite but wrong, caught only by the whole-output comparison
        part = planted(tmp, "part_tile", fused, "store_row(t0 + 3u, r0, acc3);", "store_row(t0 + 3u, r0, acc2);")
        tmap = planted(tmp, "tile_map", fused, "let w = load_w8(row0 + r, k0 + kk);",
                       "let w = load_w8(min(row0, 0u) + r, k0 + kk);")
        nost = planted(tmp, "no_store", fused, "store_row(t0 + 3u, r0, acc3);", "")
        d = ["--types", "q4_0,q8_0", "--shape", "200x256", "--n", "8"] + QUICK
        _, out, _ = expect("part_tile fails", ["--candidate", part] + d, 1, "values differ", stream="stdout")
        check("part_tile stays finite", "non-finite" not in out, out[-2000:])
        _, out, _ = expect("tile_map fails", ["--candidate", tmap] + d, 1, "values differ", stream="stdout")
        check("tile_map stays finite", "non-finite" not in out, out[-2000:])
        # the first column tile is right: the first difference is past it (rows >= 64)
        m = re.search(r"first at token \d+ row (\d+)", out)
        check("tile_map: first difference after the first column tile", m and int(m.group(1)) >= 64,
              out[-2000:])
        expect("part_tile fails within a tolerance", ["--candidate", part, "--tolerance", "1e-3"] + d, 1,
               "> tolerance", stream="stdout")
        expect("tile_map fails within a tolerance", ["--candidate", tmap, "--tolerance", "1e-3"] + d, 1,
               "> tolerance", stream="stdout")
        expect("no_store fails (non-finite) even with --tolerance", ["--candidate", nost, "--tolerance",
               "1e30"] + d, 1, "non-finite", stream="stdout")
        # another rounding: token 0's first update of each 4-step added in two halves
        order = planted(tmp, "order", fused, "acc0 += a0 * b0.x;",
                        "acc0 = (acc0 + a0 * (0.5 * b0.x)) + a0 * (0.5 * b0.x);")
        expect("another order fails bit-identity", ["--candidate", order, "--types", "q8_0", "--shape",
               "64x512", "--n", "4"] + QUICK, 1, "values differ", stream="stdout")
        expect("another order passes within a tolerance", ["--candidate", order, "--types", "q8_0",
               "--shape", "64x512", "--n", "4", "--tolerance", "1e-4"] + QUICK, 0, "PASS", stream="stdout")

        # compile errors: wgpu's message with the line and column in the candidate
        lines = fused.split("\n")
        at = next(i for i, l in enumerate(lines) if "let tid = ty * WG_M + tx;" in l)
        lines[at] = "    let tid = ty * * WG_M + tx;"
        broken = write(tmp, "broken.wgsl", "\n".join(lines))
        _, _, err = expect("WGSL error: exit 1 with wgpu's message", ["--candidate", broken, "--types",
                           "q4_0"] + QUICK, 1, "does not compile")
        check("WGSL error names line %d of the candidate" % (at + 1),
              re.search(r"wgsl:%d:\d+" % (at + 1), err) is not None, err[-2000:])
        use = "y_store(y, t, r0, acc.x);"
        check("plant binding applies", fused.count(use) == 1, "%r found %d times" % (use, fused.count(use)))
        extra = write(tmp, "binding.wgsl", fused.replace("fn store_row(", "@group(0) @binding(7) var<storage, "
                      "read_write> Z: array<f32>;\nfn store_row(", 1).replace(use, use + " Z[0] = 1.0;", 1))
        expect("a binding the layout lacks: exit 1", ["--candidate", extra, "--types", "q4_0"] + QUICK, 1,
               "does not compile")

        # geometry from flags and environment reaches the kernel; same bits at another geometry
        _, out, _ = expect("geometry by flags", ["--candidate", FUSED, "--types", "q4_K", "--shape", "200x256",
                           "--n", "9", "--wg-m", "8", "--wg-n", "4", "--tile-k", "16"] + QUICK, 0,
                           "bit-identical", stream="stdout")
        check("flags geometry used", any(l.split()[3:5] == ["8", "4"] for l in out.splitlines() if " PASS " in l),
              out[-2000:])
        _, out, _ = expect("geometry by env, flag replaces it", ["--candidate", FUSED, "--types", "q4_K",
                           "--shape", "200x256", "--n", "9", "--wg-n", "2"] + QUICK, 0, "bit-identical",
                           env={"WG_M": "4", "WG_N": "32", "TILE_K": "64", "TILE_M": "4"}, stream="stdout")
        check("env geometry used", any(l.split()[3:5] == ["4", "2"] for l in out.splitlines() if " PASS " in l),
              out[-2000:])
        jpath = os.path.join(tmp, "cand.json")
        rc, _, err = run(["--candidate", FUSED, "--types", "q4_0,q6_K", "--shape", "64x256", "--n", "3",
                          "--json", jpath] + QUICK)
        try:
            with open(jpath) as f:
                doc = json.load(f)
            ok = (rc == 0 and len(doc["rows"]) == 2 and doc["header"]["backend"] == "webgpu" and
                  all(r["status"] == "PASS" and r["mismatches"] == 0 and r["wg_m"] == 16 for r in doc["rows"]))
        except (OSError, ValueError, KeyError) as e:
            ok, err = False, str(e)
        check("candidate --json rows", ok, err[-2000:])

        # qmm bench --backend webgpu: header and verified rows, JSON header
        bpath = os.path.join(tmp, "bench.json")
        rc, out, err = expect("bench --backend webgpu", ["--backend", "webgpu", "--types", "q4_0,q6_K",
                              "--shape", "96x256", "--n", "1,33", "--strategy", "gemv,fused", "--json",
                              bpath] + QUICK, 0, "8 passed", stream="stdout")
        check("bench header names the adapter, API and limits",
              "webgpu" in out and "Vulkan" in out and "workgroup storage" in out and "TILE_K 32" in out,
              out[:2000])
        check("bench table: back-to-back and single-call columns", "ms(b2b)" in out and "ms(1call)" in out,
              out[:3000])
        try:
            with open(bpath) as f:
                doc = json.load(f)
            w = doc["header"]["webgpu"]
            ok = (w["backend_api"] == "Vulkan" and w["fused_geometry"]["tile_m"] == 4 and
                  w["limits"]["maxComputeWorkgroupStorageSize"] > 0 and len(doc["rows"]) == 8 and
                  {r["kernel"] for r in doc["rows"]} == {"gemv_wgsl", "fused_regtile_wgsl"})
            # the main figure from regions of back-to-back calls, the single call beside it
            ok = ok and "back-to-back" in doc["header"]["timing"]["ms"] and \
                "single-call" in doc["header"]["timing"]["latency_ms"] and \
                all(r["ms"] > 0 and r["latency_ms"] > 0 and 1 <= r["graph_calls"] <= 32 for r in doc["rows"]) and \
                w["shader_checks"] is False
        except (OSError, ValueError, KeyError) as e:
            ok, err = False, str(e)
        check("bench --json webgpu header and rows", ok, err[-2000:])
        cpath = os.path.join(tmp, "checks.json")
        rc, out, err = expect("bench --backend webgpu --shader-checks", ["--backend", "webgpu", "--types",
                              "bf16", "--shape", "96x77", "--n", "1,33", "--strategy", "gemv,fused",
                              "--shader-checks", "--json", cpath] + QUICK, 0, "4 passed", stream="stdout")
        check("bench header says the runtime checks are on", "with wgpu's runtime checks" in out, out[:2000])
        try:
            with open(cpath) as f:
                ok = json.load(f)["header"]["webgpu"]["shader_checks"] is True
        except (OSError, ValueError, KeyError) as e:
            ok, err = False, str(e)
        check("bench --json: shader_checks true", ok, err[-2000:])
        # the warm-up loop itself (every other run here has --warmup 0): it ends, by agreement
        # or at its cap with a warning note, and the row is timed and verified
        wpath = os.path.join(tmp, "warm.json")
        rc, out, err = run(["--backend", "webgpu", "--types", "q4_0", "--shape", "64x256", "--n", "1",
                            "--iters", "2", "--warmup", "1", "--json", wpath])
        try:
            with open(wpath) as f:
                doc = json.load(f)
            r = doc["rows"][0]
            capped = [x for x in doc["notes"] if "warm-up ran" in x]
            ok = (rc == 0 and len(doc["rows"]) == 1 and r["status"] == "ok" and r["ms"] > 0 and
                  1 <= r["graph_calls"] <= 32 and all("q4_0 64x256 n=1" in x for x in capped))
        except (OSError, ValueError, KeyError, IndexError) as e:
            ok, err = False, str(e)
        check("bench --backend webgpu with a warm-up", ok, out[-2000:] + err[-2000:])
    print("%d checks failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
