#!/usr/bin/env python3
"""test_info_cli.py — `qmm info` (env QMM_BIN) on files written by gguf-py's GGUFWriter, an
implementation independent of ours: text and --json output agree with gguf-py's reader
(alignment 64, every scalar kind, arrays, q8_0/q4_K/f32 tensors); a big-endian file written
by gguf-py and a truncated file are refused with exit status 1 and the reader's sentence;
usage errors exit 2. Every type of issue 10 that qmm's table has (ctypes on QMM_LIB) is listed
with gguf-py's name, shape and byte size; one it lacks yet is a SKIP line (a failure with
QMM_REQUIRE_ALL_TYPES=1) and a file holding it is refused naming the type id.
"""

import ctypes
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import gguf
import gguf.quants

Q = gguf.GGMLQuantizationType


def qmm(*args):
    exe = os.environ.get("QMM_BIN")
    if not exe:
        sys.exit("error: set QMM_BIN to the qmm tool (ctest does)")
    return subprocess.run([exe, "info", *args], capture_output=True, text=True, timeout=60)


def write_fixture(path, endian=gguf.GGUFEndian.LITTLE):
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(path, "testarch", endianess=endian)
    w.add_custom_alignment(64)
    w.add_uint32("t.u32", 4000000000)
    w.add_int8("t.i8", -7)
    w.add_int64("t.i64", -(2**40))
    w.add_uint64("t.u64", 2**60 + 1)
    w.add_float64("t.f64", 0.125)
    w.add_float32("t.f32", -2.5)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo \"world\"")
    w.add_array("t.arr_i32", [5, -6, 7, 8, 9, 10])
    w.add_array("t.arr_str", ["a", "bb", "ccc"])
    tensors = {}
    x = rng.standard_normal((3, 64)).astype(np.float32)
    tensors["blk.0.q8"] = (gguf.quants.quantize(x, Q.Q8_0), Q.Q8_0, [64, 3])
    # gguf-py has no q4_K quantizer; the reader only looks at the layout, so any bytes do
    tensors["blk.0.q4k"] = (rng.integers(0, 256, (2, 144), dtype=np.uint8), Q.Q4_K, [256, 2])
    tensors["norm"] = (rng.standard_normal(5).astype(np.float32), Q.F32, [5])
    for name, (data, qt, _) in tensors.items():
        if endian == gguf.GGUFEndian.BIG and qt == Q.F32:
            data = data.byteswap()
        w.add_tensor(name, data, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tensors


# The types of issue 10, as gguf-py names them.
NEW_TYPES = ["IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
             "IQ1_M", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4"]


def qmm_supports():
    """A function: gguf type -> whether qmm's table has it (ctypes on QMM_LIB), or None."""
    path = os.environ.get("QMM_LIB")
    if not path or not os.path.exists(path):
        return None
    lib = ctypes.CDLL(path)
    lib.qmm_type_is_supported.argtypes = [ctypes.c_int]
    lib.qmm_type_is_supported.restype = ctypes.c_bool
    return lambda qt: bool(lib.qmm_type_is_supported(int(qt)))


def write_types(path, qtypes):
    """A file of one [2 blocks, 3] tensor per type (random bytes: info only reads layouts)."""
    rng = np.random.default_rng(11)
    w = gguf.GGUFWriter(path, "testarch")
    for qt in qtypes:
        _, bb = gguf.GGML_QUANT_SIZES[qt]
        w.add_tensor(f"blk.0.{qt.name.lower()}.weight",
                     rng.integers(0, 256, (3, 2 * bb), dtype=np.uint8), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def check_new_types(tmp, expect):
    """`qmm info` on a gguf-py file of every new type qmm's table has: names, shapes and byte
    sizes as gguf-py reads them; a type the table lacks yet is a SKIP line (a failure with
    QMM_REQUIRE_ALL_TYPES=1), and a file holding one is refused naming the type id."""
    supported = qmm_supports()
    if supported is None:
        print("note: QMM_LIB not set: the new-type part is skipped")
        return
    have = [Q[n] for n in NEW_TYPES if supported(Q[n])]
    lack = [Q[n] for n in NEW_TYPES if not supported(Q[n])]
    for qt in lack:
        print(f"SKIP: {qt.name.lower()}: not in qmm's table yet")
        if os.environ.get("QMM_REQUIRE_ALL_TYPES", "") == "1":
            expect(False, f"{qt.name.lower()}: not in qmm's table (QMM_REQUIRE_ALL_TYPES=1)")
    if have:
        path = os.path.join(tmp, "new_types.gguf")
        write_types(path, have)
        reader = gguf.GGUFReader(path)
        r = qmm("--json", path)
        expect(r.returncode == 0, f"new types: --json exit {r.returncode}: {r.stderr}")
        got = json.loads(r.stdout)["tensors"] if r.returncode == 0 else []
        expect(len(got) == len(reader.tensors), "new types: tensor count")
        for t, rt in zip(got, reader.tensors):
            expect(t["type"] == rt.tensor_type.name.lower(),
                   f"{rt.name}: type {t['type']} != {rt.tensor_type.name}")
            expect(t["shape"] == [int(x) for x in rt.shape], f"{rt.name}: shape {t['shape']}")
            expect(t["bytes"] == int(rt.n_bytes), f"{rt.name}: bytes {t['bytes']} != "
                   f"{int(rt.n_bytes)}")
        r = qmm(path)
        for qt in have:
            bs = gguf.GGML_QUANT_SIZES[qt][0]
            line = [ln for ln in r.stdout.splitlines() if f"blk.0.{qt.name.lower()}.weight" in ln]
            expect(len(line) == 1 and f" {qt.name.lower()} " in line[0] and
                   f"[{2 * bs}, 3]" in line[0], f"text output for {qt.name}: {line}")
        print(f"new types: {', '.join(q.name.lower() for q in have)} listed as gguf-py reads them")
    if lack:
        path = os.path.join(tmp, "lacking.gguf")
        write_types(path, lack[:1])
        r = qmm(path)
        expect(r.returncode == 1 and f"type id {int(lack[0])} is not known" in r.stderr,
               f"a {lack[0].name} file: exit {r.returncode}, stderr {r.stderr!r}")


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what)

    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.gguf")
        tensors = write_fixture(good)
        reader = gguf.GGUFReader(good)

        r = qmm("--json", good)
        expect(r.returncode == 0, f"--json exit {r.returncode}: {r.stderr}")
        info = json.loads(r.stdout)
        expect(info["version"] == 3, f"version {info['version']}")
        expect(info["alignment"] == 64, f"alignment {info['alignment']}")
        expect(info["data_offset"] == reader.data_offset and info["data_offset"] % 64 == 0,
               f"data_offset {info['data_offset']} vs gguf-py {reader.data_offset}")
        meta = {m["key"]: m for m in info["metadata"]}
        keys = [k for k in reader.fields if not k.startswith("GGUF.")]
        expect([m["key"] for m in info["metadata"]] == keys, "metadata keys/order differ")
        want = {"t.u32": ("u32", 4000000000), "t.i8": ("i8", -7), "t.i64": ("i64", -(2**40)),
                "t.u64": ("u64", str(2**60 + 1)),  # beyond 2^53: a decimal string
                "t.f64": ("f64", 0.125), "t.f32": ("f32", -2.5), "t.bool": ("bool", True),
                "t.str": ("str", "héllo \"world\""), "general.alignment": ("u32", 64),
                "general.architecture": ("str", "testarch")}
        for k, (ty, val) in want.items():
            expect(k in meta and meta[k]["type"] == ty and meta[k]["value"] == val,
                   f"{k}: {meta.get(k)} != {ty} {val!r}")
        a = meta.get("t.arr_i32", {}).get("value", {})
        expect(a == {"elem_type": "i32", "n": 6, "first": [5, -6, 7, 8]}, f"t.arr_i32: {a}")
        a = meta.get("t.arr_str", {}).get("value", {})
        expect(a == {"elem_type": "str", "n": 3, "first": ["a", "bb", "ccc"]}, f"t.arr_str: {a}")
        got = info["tensors"]
        expect(len(got) == len(reader.tensors), "tensor count")
        for t, rt in zip(got, reader.tensors):
            expect(t["name"] == rt.name, f"name {t['name']} != {rt.name}")
            expect(t["type"].lower() == rt.tensor_type.name.lower(),
                   f"{t['name']}: type {t['type']} != {rt.tensor_type.name}")
            expect(t["shape"] == [int(s) for s in rt.shape] == tensors[rt.name][2],
                   f"{t['name']}: shape {t['shape']} != {list(rt.shape)}")
            expect(t["bytes"] == int(rt.n_bytes), f"{t['name']}: bytes")
            expect(info["data_offset"] + t["offset"] == int(rt.data_offset),
                   f"{t['name']}: offset {t['offset']}")
            expect(t["offset"] % 64 == 0, f"{t['name']}: offset not aligned to 64")

        r = qmm(good)
        expect(r.returncode == 0, f"text exit {r.returncode}")
        for s in ["version:    3", "alignment:  64", "blk.0.q4k", "q4_K", "[256, 2]", "t.arr_str",
                  "str[3] [\"a\", \"bb\", \"ccc\"]", "i32[6] [5, -6, 7, 8, ...]"]:
            expect(s in r.stdout, f"text output lacks {s!r}")

        big = os.path.join(tmp, "big.gguf")
        write_fixture(big, gguf.GGUFEndian.BIG)
        r = qmm(big)
        expect(r.returncode == 1 and "big-endian GGUF not supported" in r.stderr,
               f"big-endian: exit {r.returncode}, stderr {r.stderr!r}")

        cut = os.path.join(tmp, "cut.gguf")
        with open(good, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: reader.data_offset - 3])
        r = qmm(cut)
        expect(r.returncode == 1 and "QMM_ERR_FORMAT" in r.stderr and "cut.gguf" in r.stderr,
               f"truncated: exit {r.returncode}, stderr {r.stderr!r}")

        r = qmm(os.path.join(tmp, "missing.gguf"))
        expect(r.returncode == 1 and "QMM_ERR_IO" in r.stderr, f"missing: {r.stderr!r}")
        r = qmm("--help")
        expect(r.returncode == 0 and "usage: qmm info" in r.stdout, "--help")
        r = qmm()
        expect(r.returncode == 2 and "usage" in r.stderr, "no arguments")
        r = qmm("--bogus", good)
        expect(r.returncode == 2 and "--bogus" in r.stderr, f"unknown option: {r.stderr!r}")
        r = qmm(good, good)
        expect(r.returncode == 2, "two files")

        check_new_types(tmp, expect)

    if failures:
        sys.exit(f"{len(failures)} failures")
    print("ok")


if __name__ == "__main__":
    main()
