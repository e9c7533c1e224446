#!/usr/bin/env python3
"""test_tune_cli.py - `qmm tune` from the outside, and `qmm bench` using what it wrote.

`qmm tune --quick --types q4_0 --out F` writes a tuning file that the library applies, and
`QMM_TUNE_FILE=F qmm bench --types q4_0 --n 1` names F in its header; the default location
($XDG_CACHE_HOME/qmm/tune-<id>.json) is written and found; a named file that does not fit
fails bench's context creation, one at the default location is ignored with the reason in the
header; strict argument parsing; --backend cuda/webgpu say "not yet". Other runs use tiny
shapes so the test takes well under a minute. Runs the tool named by QMM_BIN (set by CTest);
exit code 77 (skipped) without it.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

QMM_BIN = os.environ.get("QMM_BIN")

TINY = ["--types", "q4_0,f16", "--shape", "64x256,32x512", "--n", "1,2,16", "--reps", "1"]


def run(cmd, *args, env=None, timeout=600):
    e = {k: v for k, v in os.environ.items()
         if k not in ("QMM_TUNE_FILE", "XDG_CACHE_HOME", "QMM_STRATEGY", "ONLY", "ITERS")}
    e.update(env or {})
    return subprocess.run([QMM_BIN, cmd, *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


def bench_header(path_json, *args, env=None):
    p = run("bench", "--types", "q4_0", "--n", "1", "--shape", "64x256", "--iters", "1",
            "--json", path_json, *args, env=env)
    return p


class Parsing(unittest.TestCase):
    def usage_error(self, *args, names=()):
        p = run("tune", *args)
        self.assertEqual(p.returncode, 2, f"{args}: rc {p.returncode}\n{p.stderr}")
        self.assertTrue(p.stderr.startswith("qmm tune:"), p.stderr)
        for n in names:
            self.assertIn(n, p.stderr)
        self.assertEqual(p.stdout, "")

    def test_help(self):
        p = run("tune", "--help")
        self.assertEqual(p.returncode, 0)
        for flag in ["--backend", "--types", "--quick", "--out", "--threads", "--n", "--shape",
                     "--reps", "--seed", "--help"]:
            self.assertIn(flag, p.stdout)

    def test_bad_arguments(self):
        self.usage_error("--backend", "tpu", names=["--backend", "tpu"])
        self.usage_error("--types", "q4_0,q9_9", names=["--types", "q9_9"])
        self.usage_error("--types", "q8_K", names=["--types"])
        self.usage_error("--n", "4,2", names=["--n", "increasing"])
        self.usage_error("--n", "0", names=["--n"])
        self.usage_error("--reps", "0", names=["--reps"])
        self.usage_error("--threads", "x", names=["--threads"])
        self.usage_error("--shape", "64x100", "--types", "q4_K", names=["k=100", "q4_K"])
        self.usage_error("--out", "", names=["--out"])
        self.usage_error("--shape", "64x256,64x256", names=["--shape", "twice"])
        self.usage_error("--frobnicate", names=["--frobnicate"])
        self.usage_error("stray", names=["stray"])

    def test_other_backends_not_yet(self):
        for b in ("cuda", "webgpu"):
            p = run("tune", "--backend", b, "--out", "/tmp/never-written.json")
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("not yet", p.stderr)
            self.assertFalse(os.path.exists("/tmp/never-written.json"))

    def test_unwritable_out_fails_before_the_run(self):
        p = run("tune", *TINY, "--out", "/nonexistent-dir/tune.json")
        self.assertEqual(p.returncode, 1)
        self.assertIn("/nonexistent-dir", p.stderr)
        self.assertEqual(p.stdout, "")


class Runs(unittest.TestCase):
    def test_quick_q4_0_then_bench_names_it(self):
        """The command of the issue: tune --quick on the LFM shapes, bench names the file."""
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "tune.json")
            p = run("tune", "--quick", "--types", "q4_0", "--out", f)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("wrote " + f, p.stdout)
            with open(f) as fh:
                doc = json.load(fh)
            self.assertEqual(doc["format"], "qmm-tune")
            self.assertTrue(doc["method"]["quick"])
            self.assertEqual(len(doc["method"]["shapes"]), 5)  # the LFM2.5-350M shapes
            self.assertEqual({r["type"] for r in doc["rows"]}, {"q4_0"})
            self.assertEqual(len([r for r in doc["rows"] if "m" not in r]), 1)  # one general
            j = os.path.join(d, "bench.json")
            b = run("bench", "--types", "q4_0", "--n", "1", "--iters", "1", "--json", j,
                    env={"QMM_TUNE_FILE": f})
            self.assertEqual(b.returncode, 0, b.stdout + b.stderr)
            self.assertIn("auto:     tuning file " + f, b.stdout)
            with open(j) as fh:
                h = json.load(fh)["header"]
            self.assertEqual(h["tuning"]["state"], "applied")
            self.assertEqual(h["tuning"]["path"], f)
            self.assertIn(f, h["auto_table"])

    def test_tiny_file_contents(self):
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "t.json")
            p = run("tune", *TINY, "--out", f)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(f) as fh:
                doc = json.load(fh)
            self.assertEqual(doc["format_version"], 1)
            self.assertEqual(doc["backend"], "cpu")
            m = doc["machine"]
            self.assertEqual(len(m["id"]), 16)
            self.assertGreaterEqual(m["threads"], 1)
            self.assertIn(m["isa"], ("generic", "avx2", "avx512", "amx"))
            self.assertEqual(doc["method"]["n"], [1, 2, 16])
            self.assertIn("tune", doc["command"])
            types = [r["type"] for r in doc["rows"]]
            self.assertEqual(set(types), {"q4_0", "f16"})
            for r in doc["rows"]:
                self.assertLessEqual(set(r), {"type", "m", "k", "int8_n", "gemv_max_n"})
                self.assertTrue(r["int8_n"] is None or
                                (len(r["int8_n"]) == 2 and 1 <= r["int8_n"][0] <= r["int8_n"][1]))
                if r["type"] == "f16":
                    self.assertIsNone(r["int8_n"])  # no int8 kernel for float weights
            # every (type, shape, n, strategy) measured, pruned or failed is recorded
            ms = doc["measurements"]
            self.assertTrue(all(x["status"] in ("ok", "pruned") for x in ms), ms)
            ok = [x for x in ms if x["status"] == "ok"]
            self.assertTrue(all(x["ms"] > 0 and x["kernel"] for x in ok))
            seen = {(x["type"], x["m"], x["k"], x["n"], x["strategy"]) for x in ms}
            for t in ("q4_0", "f16"):
                for (mm, kk) in ((64, 256), (32, 512)):
                    self.assertIn((t, mm, kk, 1, "fused"), seen)
                    self.assertIn((t, mm, kk, 16, "fused"), seen)
            self.assertIn(("q4_0", 64, 256, 1, "int8"), seen)
            self.assertNotIn(("f16", 64, 256, 1, "int8"), seen)

    def test_default_location_and_bad_files(self):
        with tempfile.TemporaryDirectory() as d:
            env = {"XDG_CACHE_HOME": d}
            p = run("tune", "--types", "q4_0", "--shape", "64x256", "--n", "1,2", "--reps", "1",
                    "--quick", env=env)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            files = os.listdir(os.path.join(d, "qmm"))
            self.assertEqual(len(files), 1, files)
            self.assertRegex(files[0], r"^tune-[0-9a-f]{16}\.json$")
            f = os.path.join(d, "qmm", files[0])
            j = os.path.join(d, "b.json")
            b = bench_header(j, env=env)
            self.assertEqual(b.returncode, 0, b.stdout + b.stderr)
            self.assertIn("auto:     tuning file " + f, b.stdout)
            # a file for another machine at the default location: ignored, the header says why
            with open(f) as fh:
                doc = json.load(fh)
            doc["machine"]["cpu"] = "Some Other CPU"
            with open(f, "w") as fh:
                json.dump(doc, fh)
            b = bench_header(j, env=env)
            self.assertEqual(b.returncode, 0, b.stdout + b.stderr)
            self.assertIn("compiled-in table", b.stdout)
            self.assertIn("another machine", b.stdout)
            with open(j) as fh:
                h = json.load(fh)["header"]
            self.assertEqual(h["tuning"]["state"], "ignored")
            self.assertEqual(h["tuning"]["status"], "QMM_ERR_UNSUPPORTED")
            # the same file named explicitly: bench cannot create its context
            b = bench_header(j, env={"QMM_TUNE_FILE": f})
            self.assertEqual(b.returncode, 1)
            self.assertIn(f, b.stderr)
            self.assertIn("another machine", b.stderr)
            # truncated, explicitly named: an error naming the file
            with open(f) as fh:
                text = fh.read()
            cut = os.path.join(d, "cut.json")
            with open(cut, "w") as fh:
                fh.write(text[: len(text) // 2])
            b = bench_header(j, env={"QMM_TUNE_FILE": cut})
            self.assertEqual(b.returncode, 1)
            self.assertIn(cut, b.stderr)
            self.assertIn("not valid JSON", b.stderr)
            # turned off: the compiled-in table
            b = bench_header(j, env={"QMM_TUNE_FILE": "", **env})
            self.assertEqual(b.returncode, 0, b.stderr)
            self.assertIn("turned off", b.stdout)


if __name__ == "__main__":
    if not QMM_BIN:
        print("SKIP: QMM_BIN is not set (run through ctest)")
        sys.exit(77)
    unittest.main()
