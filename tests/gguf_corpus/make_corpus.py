#!/usr/bin/env python3
"""make_corpus.py — write a corpus of crafted GGUF files, valid and hostile.

Every file is built here byte by byte with Python's struct module, independently of qmm's
GGUF writer, so a bug shared by our reader and writer cannot hide. Each file is named
<CLASS>_<what>.gguf after the fault class of docs/FAULTS.md it exercises
(J: integer overflow and exhaustion, K: offsets/alignment/truncation, L: endianness; V: valid
files that must open), and manifest.json records for each file:

    file      the file name
    cls       J, K, L or V
    expect    "reject" (the reader must fail with QMM_ERR_FORMAT, or QMM_ERR_IO where the
              file is short) or "accept" (it must open)
    fields    words of which at least one must appear (case-insensitive) in the reader's error
              message: the field it names (reject files only)
    why       one sentence
    needs     (optional) type names the file holds that qmm's table may not have yet
    sizes     (optional, accept files) tensor name -> the byte size the reader must report

GGUF v3 layout (ggml's docs/gguf.md, gguf-py's constants.py), all little-endian:
    u32 magic "GGUF" | u32 version (3) | u64 n_tensors | u64 n_kv
    n_kv    x { string key | u32 value_type | value }
    n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset }
    padding to general.alignment (default 32) from the start of the file | tensor data
    string = u64 length + bytes (no NUL); array = u32 elem_type + u64 count + elements.
Tensor offsets are relative to the start of the data section and multiples of the alignment.

Usage: make_corpus.py OUTDIR     (writes OUTDIR/*.gguf and OUTDIR/manifest.json)
       make_corpus.py --seeds OUTDIR   (only a few small valid files: a fuzzing seed corpus)
"""

import json
import os
import random
import struct
import sys

# GGUF metadata value types (gguf-py GGUFValueType).
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
SCALAR_FMT = {T_U8: "B", T_I8: "b", T_U16: "H", T_I16: "h", T_U32: "I", T_I32: "i",
              T_F32: "f", T_BOOL: "B", T_U64: "Q", T_I64: "q", T_F64: "d"}

# GGML type ids used here: (id, block size, bytes per block) (ggml-common.h).
GGML = {"f32": (0, 1, 4), "f16": (1, 1, 2), "q4_0": (2, 32, 18), "q4_1": (3, 32, 20),
        "q5_0": (6, 32, 22), "q5_1": (7, 32, 24), "q8_0": (8, 32, 34), "q2_K": (10, 256, 84),
        "q3_K": (11, 256, 110), "q4_K": (12, 256, 144), "q5_K": (13, 256, 176),
        "q6_K": (14, 256, 210), "bf16": (30, 1, 2),
        "iq2_xxs": (16, 256, 66), "iq2_xs": (17, 256, 74), "iq3_xxs": (18, 256, 98),
        "iq1_s": (19, 256, 50), "iq4_nl": (20, 32, 18), "iq3_s": (21, 256, 110),
        "iq2_s": (22, 256, 82), "iq4_xs": (23, 256, 136), "iq1_m": (29, 256, 56),
        "tq1_0": (34, 256, 54), "tq2_0": (35, 256, 66), "mxfp4": (39, 32, 17),
        "nvfp4": (40, 64, 36)}
# The first 13 weight types, and those of issue 10. A file holding a type qmm's table lacks
# says so in the manifest ("needs"): test_gguf_corpus.py then skips it.
FIRST_TYPES = ["f32", "f16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K",
               "q5_K", "q6_K", "bf16"]
NEW_TYPES = [n for n in GGML if n not in FIRST_TYPES]
# Byte offset of the f16 d of the new types that have one.
F16_D = {"iq2_xxs": 0, "iq2_xs": 0, "iq3_xxs": 0, "iq1_s": 0, "iq4_nl": 0, "iq3_s": 0,
         "iq2_s": 0, "iq4_xs": 0, "tq1_0": 52, "tq2_0": 64}

U64_MAX = (1 << 64) - 1


class Endian:
    """Packing for one byte order; '<' for the normal file, '>' for the big-endian class."""

    def __init__(self, prefix="<"):
        self.p = prefix

    def pack(self, fmt, *vals):
        return struct.pack(self.p + fmt, *vals)

    def string(self, s, length=None):
        b = s.encode() if isinstance(s, str) else s
        return self.pack("Q", len(b) if length is None else length) + b

    def value(self, vtype, val):
        """Encode a value of metadata type vtype (arrays: val = (elem_type, [items]))."""
        if vtype == T_STR:
            return self.string(val)
        if vtype == T_ARR:
            et, items = val
            out = self.pack("IQ", et, len(items))
            for it in items:
                out += self.value(et, it)
            return out
        return self.pack(SCALAR_FMT[vtype], val)

    def kv(self, key, vtype, val, raw_value=None):
        return self.string(key) + self.pack("I", vtype) + (
            raw_value if raw_value is not None else self.value(vtype, val))

    def tensor_info(self, name, dims, ttype, offset):
        return (self.string(name) + self.pack("I", len(dims)) +
                b"".join(self.pack("Q", d & U64_MAX) for d in dims) +
                self.pack("IQ", ttype, offset & U64_MAX))


def pad_to(n, align):
    return (n + align - 1) // align * align


def tensor_bytes(tname, dims):
    _, bs, bb = GGML[tname]
    ne = 1
    for d in dims:
        ne *= d
    assert dims[0] % bs == 0
    return ne // bs * bb


def tensor_payload(rng, tname, nbytes):
    """Plausible bytes for a tensor: finite f16 scales at the right places are not needed by
    the reader, but keep them finite anyway so an accept file is also usable for matmuls."""
    if tname == "f32":
        return b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(nbytes // 4))
    b = bytearray(rng.getrandbits(8) for _ in range(nbytes))
    if tname in ("f16", "bf16"):
        for i in range(1, nbytes, 2):
            b[i] &= 0x3B  # exponent well below Inf/NaN
    elif tname in ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0"):
        _, _, bb = GGML[tname]
        head = 4 if tname in ("q4_1", "q5_1") else 2
        for blk in range(0, nbytes, bb):
            for i in range(blk + 1, blk + head, 2):
                b[i] &= 0x3B
    elif tname in ("q4_K", "q5_K", "q2_K"):
        _, _, bb = GGML[tname]
        off = 0 if tname != "q2_K" else 80
        for blk in range(0, nbytes, bb):
            b[blk + off + 1] &= 0x3B
            b[blk + off + 3] &= 0x3B
    elif tname in ("q3_K", "q6_K"):
        _, _, bb = GGML[tname]
        for blk in range(0, nbytes, bb):
            b[blk + bb - 1] &= 0x3B
    elif tname in F16_D:
        _, _, bb = GGML[tname]
        for blk in range(0, nbytes, bb):
            b[blk + F16_D[tname] + 1] &= 0x3B
    elif tname == "iq1_m":  # f16 bits 12..15 are the top nibble of byte 55: clear bit 14
        for blk in range(0, nbytes, 56):
            b[blk + 55] &= 0xBF
    elif tname == "mxfp4":  # E8M0 0xFF is NaN
        for blk in range(0, nbytes, 17):
            b[blk] = min(b[blk], 0xFE)
    elif tname == "nvfp4":  # UE4M3 0x7F and 0xFF are NaN
        for blk in range(0, nbytes, 36):
            for i in range(4):
                if b[blk + i] & 0x7F == 0x7F:
                    b[blk + i] ^= 1
    return bytes(b)


def build(tensors=(), kvs=None, *, e=None, alignment=None, version=3, n_tensors=None,
          n_kv=None, magic=b"GGUF", raw_infos=None, data_pad=True, trailing=b"", seed=1,
          offsets=None, truncate=None, extra_kv=b"", data_override=None):
    """Assemble a GGUF file.

    tensors: list of (name, type name, dims); offsets are the running padded sum unless
    `offsets` overrides them. kvs: list of already-encoded kv bytes (default: a small set).
    Every override exists to break exactly one thing."""
    e = e or Endian()
    rng = random.Random(seed)
    align = 32 if alignment is None else alignment
    if kvs is None:
        kvs = default_kvs(e)
    kvs = list(kvs)
    if alignment is not None:
        kvs.append(e.kv("general.alignment", T_U32, alignment))
    kv_bytes = b"".join(kvs) + extra_kv

    infos = b""
    data = b""
    run = 0
    for i, (name, tname, dims) in enumerate(tensors):
        nb = tensor_bytes(tname, dims)
        off = run if offsets is None else offsets[i]
        infos += e.tensor_info(name, dims, GGML[tname][0], off)
        run = pad_to(run + nb, align)
        if data_override is None:
            data += tensor_payload(rng, tname, nb)
            if i + 1 < len(tensors):
                data += b"\0" * (run - len(data))
    if raw_infos is not None:
        infos = raw_infos
    if data_override is not None:
        data = data_override

    head = (magic if isinstance(magic, bytes) else e.pack("I", magic)) + e.pack(
        "I", version) + e.pack("QQ", len(tensors) if n_tensors is None else n_tensors,
                               len(kvs) + (1 if extra_kv else 0) if n_kv is None else n_kv)
    out = head + kv_bytes + infos
    if data_pad:
        out += b"\0" * (pad_to(len(out), align) - len(out))
    out += data + trailing
    if truncate is not None:
        out = out[:truncate]
    return out


def default_kvs(e):
    return [
        e.kv("general.architecture", T_STR, "llama"),
        e.kv("general.name", T_STR, "qmm corpus"),
        e.kv("llama.block_count", T_U32, 2),
        e.kv("llama.rope.freq_base", T_F32, 10000.0),
        e.kv("tokenizer.ggml.tokens", T_ARR, (T_STR, ["<s>", "</s>", "a", "b"])),
        e.kv("tokenizer.ggml.scores", T_ARR, (T_F32, [0.0, 0.0, -1.0, -2.0])),
        e.kv("general.file_type", T_U32, 2),
    ]


# A small model-like tensor set: every row a whole number of blocks.
BASE_TENSORS = [
    ("token_embd.weight", "q4_0", [64, 4]),
    ("blk.0.attn_norm.weight", "f32", [64]),
    ("blk.0.ffn_up.weight", "q8_0", [64, 3]),
    ("blk.0.ffn_down.weight", "q4_K", [256, 2]),
    ("output.weight", "f16", [64, 2]),
]


def two_blocks(tname):
    """ne of a small matrix of the type: rows of 2 blocks (8 elements for f32/f16/bf16), 3 rows."""
    bs = GGML[tname][1]
    return [2 * bs if bs > 1 else 8, 3]


# A model-like file of new-type tensors (gpt-oss style mxfp4 experts, an i-quant attention,
# an nvfp4 and an iq4_xs projection).
NEW_MIX = [("blk.0.attn_q.weight", "iq2_xxs", [256, 4]),
           ("blk.0.ffn_gate_exps.weight", "mxfp4", [64, 3]),
           ("blk.0.ffn_up.weight", "nvfp4", [128, 2]),
           ("blk.0.ffn_down.weight", "iq4_xs", [512, 2]),
           ("blk.0.attn_norm.weight", "f32", [64])]


def type_cases(e):
    """Per type: its byte size is the reader's (accept files record it in "sizes"), and a
    wrong size is refused. Each yields a 7th element, extra manifest fields."""
    def sizes(tensors):
        return {n: tensor_bytes(t, d) for n, t, d in tensors}

    mix_types = sorted({t for _, t, _ in NEW_MIX if t in NEW_TYPES})
    yield ("V_new_types_mix", "V", "accept", [], f"a model-like file of {', '.join(mix_types)} "
           "tensors", build(NEW_MIX), {"needs": mix_types, "sizes": sizes(NEW_MIX)})
    every = [(f"t.{n}", n, two_blocks(n)) for n in NEW_TYPES]
    yield ("V_all_new_types", "V", "accept", [], "one tensor of each of the 13 new types",
           build(every), {"needs": NEW_TYPES, "sizes": sizes(every)})
    for n, (tid, bs, bb) in GGML.items():
        pair = [("w", n, two_blocks(n)), ("x", "f32", [8])]
        nb = tensor_bytes(n, pair[0][2])
        if n in NEW_TYPES:
            yield (f"V_type_{n}", "V", "accept", [], f"a {n} tensor of {nb} bytes, then an f32",
                   build(pair), {"needs": [n], "sizes": sizes(pair)})
        # the next tensor inside w's bytes: only a reader with too small a size accepts it
        yield (f"K_size_{n}_overlap", "K", "reject", ["overlap"],
               f"{n} tensor of {nb} bytes, the next tensor at offset {(nb - 1) // 32 * 32}",
               build(pair, offsets=[0, (nb - 1) // 32 * 32]), {"needs": [n]})
        if bs > 1:
            dims = [bs + bs // 2, 3]
            yield (f"J_row_{n}_not_block", "J", "reject", ["block", "multiple"],
                   f"{n} with ne[0] = {dims[0]}, not a multiple of {bs}",
                   build([("w", "f32", [8])], raw_infos=e.tensor_info("w", dims, tid, 0),
                         data_override=b"\0" * (3 * bb * 2)), {"needs": [n]})


def cases():
    """Yield (name, cls, expect, fields, why, bytes[, extra manifest fields])."""
    e = Endian()
    base = build(BASE_TENSORS)

    # ----------------------------------------------------------------- V: valid files
    yield "V_base", "V", "accept", [], "small model-like file, default alignment 32", base
    yield ("V_all_types", "V", "accept", [], "one tensor of each of the first 13 weight types",
           build([(f"t.{n}", n, two_blocks(n)) for n in FIRST_TYPES]))
    yield from type_cases(e)
    yield "V_no_tensors", "V", "accept", [], "metadata only", build([])
    yield "V_no_kv", "V", "accept", [], "tensors, no metadata", build(BASE_TENSORS, kvs=[])
    yield ("V_empty", "V", "accept", [], "header only: no tensors, no metadata",
           build([], kvs=[]))
    yield ("V_4d", "V", "accept", [], "a 4-dimensional tensor (the maximum)",
           build([("t4", "f32", [4, 3, 2, 2])]))
    yield ("V_trailing_bytes", "V", "accept", [], "bytes after the last tensor are ignored",
           build(BASE_TENSORS, trailing=b"\xff" * 13))
    yield ("V_all_kv_types", "V", "accept", [], "one key of every metadata value type",
           build(BASE_TENSORS[:1], kvs=[
               e.kv("a.u8", T_U8, 255), e.kv("a.i8", T_I8, -128), e.kv("a.u16", T_U16, 65535),
               e.kv("a.i16", T_I16, -32768), e.kv("a.u32", T_U32, 2**32 - 1),
               e.kv("a.i32", T_I32, -2**31), e.kv("a.f32", T_F32, 1.5),
               e.kv("a.bool", T_BOOL, 1), e.kv("a.str", T_STR, "x"),
               e.kv("a.empty_str", T_STR, ""), e.kv("a.u64", T_U64, U64_MAX),
               e.kv("a.i64", T_I64, -2**63), e.kv("a.f64", T_F64, -0.25),
               e.kv("a.arr_empty", T_ARR, (T_U32, [])),
               e.kv("a.arr_i16", T_ARR, (T_I16, [1, -2, 3])),
               e.kv("a.arr_str", T_ARR, (T_STR, ["", "yz"]))]))
    for a in (16, 32, 64, 128):
        yield (f"K_align_{a}_valid", "K", "accept", [], f"general.alignment = {a} (u32)",
               build(BASE_TENSORS, alignment=a))

    # ----------------------------------------------------------------- J: overflow, exhaustion
    ov = ["overflow", "too large", "too big", "size", "elements", "ne", "dim", "exceed", "range"]
    yield ("J_nelements_wrap64", "J", "reject", ov,
           "ne = [2^32, 2^32, 2]: element count wraps 64 bits to 0",
           build([("w", "f32", [1 << 32, 1 << 32, 2])], data_override=b""))
    yield ("J_nbytes_wrap64", "J", "reject", ov,
           "f32 ne = [2^31, 2^31]: 2^62 elements, byte size 2^64 wraps to 0",
           build([("w", "f32", [1 << 31, 1 << 31])], data_override=b""))
    yield ("J_nelements_exceed_int64", "J", "reject", ov, "ne = [2^63]: not an int64",
           build([("w", "f32", [1 << 63])], data_override=b""))
    yield ("J_dim_negative", "J", "reject", ov, "ne[1] = -1 as int64 (0xFFFF...)",
           build([("w", "f32", [4, U64_MAX])], data_override=b""))
    yield ("J_padded_size_wraps_zero", "J", "reject", ov + ["offset", "pad"],
           "f32 ne = [2^62-1]: byte size 2^64-4, padded to 32 it wraps to 0",
           build([("w", "f32", [(1 << 62) - 1]), ("v", "f32", [8])], offsets=[0, 0],
                 data_override=b"\0" * 64))
    yield ("J_q8_0_bytes_wrap64", "J", "reject", ov,
           "q8_0 ne = [2^62, 16]: blocks*34 wraps 64 bits",
           build([("w", "q8_0", [1 << 62, 16])], data_override=b""))
    yield ("J_offset_plus_size_wraps", "J", "reject", ov + ["offset", "end of file", "eof"],
           "offset 2^64-32 + 64 bytes wraps past 0",
           build([("w", "f32", [16])], offsets=[U64_MAX - 31]))
    for nd in (5, 8, 0xFFFFFFFF):
        infos = e.string("w") + e.pack("I", nd) + e.pack("Q", 1) * min(nd, 8) + e.pack("IQ", 0, 0)
        yield (f"J_n_dims_{nd}", "J", "reject", ["n_dims", "dimensions", "dims"],
               f"n_dims = {nd} (> 4)", build([("w", "f32", [1])], raw_infos=infos))
    infos = e.string("w") + e.pack("I", 0) + e.pack("IQ", 0, 0)
    yield ("J_n_dims_0", "J", "reject", ["n_dims", "dimensions", "dims"],
           "n_dims = 0", build([("w", "f32", [1])], raw_infos=infos))
    slen = ["length", "string", "key", "name", "size", "end of file", "eof", "truncat"]
    for ln, tag in ((1 << 63, "2p63"), (U64_MAX, "u64max"), (1 << 40, "2p40"), (4000, "4000")):
        yield (f"J_key_len_{tag}", "J", "reject", slen, f"first key's length = {ln} in a tiny file",
               build([], kvs=[e.string("general.name", length=ln) + e.pack("I", T_STR) +
                              e.string("x")]))
    yield ("J_str_value_len_huge", "J", "reject", slen, "string value length 2^62",
           build([], kvs=[e.kv("general.name", T_STR, None,
                               raw_value=e.string("abc", length=1 << 62))]))
    yield ("J_tensor_name_len_huge", "J", "reject", slen, "tensor name length 2^63",
           build([("w", "f32", [8])],
                 raw_infos=e.string("w", length=1 << 63) + e.pack("IQIQ", 1, 8, 0, 0)))
    alen = ["array", "count", "length", "size", "end of file", "eof", "overflow", "truncat"]
    yield ("J_array_count_2p62_u8", "J", "reject", alen, "u8 array of 2^62 elements, 3 present",
           build([], kvs=[e.kv("a", T_ARR, None, raw_value=e.pack("IQ", T_U8, 1 << 62) + b"abc")]))
    yield ("J_array_count_wraps_bytes", "J", "reject", alen,
           "u64 array of 2^61 elements: count*8 wraps 64 bits to 0",
           build([], kvs=[e.kv("a", T_ARR, None, raw_value=e.pack("IQ", T_U64, 1 << 61))]))
    yield ("J_array_count_strings_huge", "J", "reject", alen,
           "string array of 2^60 elements in a tiny file",
           build([], kvs=[e.kv("a", T_ARR, None,
                               raw_value=e.pack("IQ", T_STR, 1 << 60) + e.string("x"))]))
    yield ("J_array_count_1e9_u32", "J", "reject", alen,
           "u32 array of 10^9 elements, none present",
           build([], kvs=[e.kv("a", T_ARR, None, raw_value=e.pack("IQ", T_U32, 10**9))]))
    cnt = ["count", "tensor", "kv", "key", "metadata", "end of file", "eof", "truncat",
           "too many", "exceed"]
    for nt, tag in ((1 << 63, "2p63"), (U64_MAX, "u64max"), (10**9, "1e9")):
        yield (f"J_tensor_count_{tag}", "J", "reject", cnt, f"n_tensors = {nt}, one present",
               build(BASE_TENSORS[:1], n_tensors=nt))
        yield (f"J_kv_count_{tag}", "J", "reject", cnt, f"n_kv = {nt}, a few present",
               build(BASE_TENSORS[:1], n_kv=nt))
    ty = ["type"]
    for t in (4, 5, 31, 1000, 0xFFFFFFFF):
        infos = e.string("w") + e.pack("I", 1) + e.pack("Q", 32) + e.pack("IQ", t, 0)
        yield (f"J_tensor_type_{t}", "J", "reject", ty, f"tensor type id {t} does not exist",
               build([("w", "f32", [32])], raw_infos=infos))
    for t in (13, 0xFFFFFFFF):
        yield (f"J_kv_type_{t}", "J", "reject", ty, f"metadata value type {t} does not exist",
               build([], kvs=[e.kv("general.name", T_STR, "n"),
                              e.string("bad") + e.pack("I", t) + e.pack("Q", 0)]))
        yield (f"J_array_elem_type_{t}", "J", "reject", ty, f"array element type {t}",
               build([], kvs=[e.kv("a", T_ARR, None, raw_value=e.pack("IQ", t, 1) + b"\0" * 8)]))
    yield ("J_duplicate_tensor_name", "J", "reject", ["duplicate", "twice", "again"],
           "two tensors named blk.0.ffn_up.weight",
           build(BASE_TENSORS[:2] + [("blk.0.ffn_up.weight", "q8_0", [64, 3]),
                                     ("blk.0.ffn_up.weight", "q8_0", [64, 3])]))
    yield ("J_duplicate_key", "J", "reject", ["duplicate", "twice", "again"],
           "general.name twice", build(BASE_TENSORS, kvs=default_kvs(e) + [
               e.kv("general.name", T_STR, "other")]))
    zd = ["zero", "dim", "ne", "empty", "elements"]
    yield ("J_zero_dim", "J", "reject", zd, "ne = [64, 0]",
           build([("w", "f32", [64, 0])], data_override=b""))
    yield ("J_zero_dim_first", "J", "reject", zd, "ne = [0, 4] among valid tensors",
           build(BASE_TENSORS[:2] + [("z", "f32", [0, 4])]))
    yield ("J_row_not_block_multiple", "J", "reject", ["block", "multiple", "ne", "row"],
           "q4_0 with ne[0] = 48, not a multiple of 32",
           build([("w", "f32", [48, 2])], raw_infos=e.tensor_info("w", [48, 2], 2, 0),
                 data_override=b"\0" * 64))
    nest = ["nested", "array", "depth", "deep"]

    def nested(depth):
        """An array value nested `depth` deep (depth 1: a plain u8 array)."""
        return e.pack("IQ", T_ARR, 1) * (depth - 1) + e.pack("IQ", T_U8, 1) + b"\x07"

    # QMM_GGUF_MAX_DEPTH is 8 (include/qmm_gguf.h): depth 8 opens, 9 and 4096 do not.
    yield ("V_nested_array_8", "V", "accept", [], "arrays nested 8 deep (the maximum)",
           build([], kvs=[e.kv("a", T_ARR, None, raw_value=nested(8))]))
    yield ("V_nested_array_2", "V", "accept", [], "an array of two u8 arrays",
           build([], kvs=[e.kv("a", T_ARR, (T_ARR, [(T_U8, [1, 2]), (T_U8, [3])]))]))
    for depth in (9, 4096):
        yield (f"J_nested_array_{depth}", "J", "reject", nest, f"arrays nested {depth} deep",
               build([], kvs=[e.kv("a", T_ARR, None, raw_value=nested(depth))]))
    yield ("V_version_2", "V", "accept", [], "version 2 (same layout as 3)",
           build(BASE_TENSORS, version=2))
    for v, why in ((0, "version 0"), (1, "version 1 (u32 counts, unsupported)"),
                   (4, "version 4"), (999, "version 999")):
        yield (f"J_version_{v}", "J", "reject", ["version"], why, build(BASE_TENSORS, version=v))
    yield ("J_bool_value_2", "J", "reject", ["bool"], "a bool value byte of 2",
           build([], kvs=[e.kv("a.b", T_BOOL, 2)]))
    yield ("J_bool_array_ff", "J", "reject", ["bool"], "a bool array holding 0xFF",
           build([], kvs=[e.kv("a.b", T_ARR, (T_BOOL, [0, 1, 255]))]))
    yield ("J_empty_key", "J", "reject", ["key", "empty"], "a key of length 0",
           build([], kvs=[e.kv("", T_U32, 1)]))
    yield ("J_key_with_nul", "J", "reject", ["key", "nul"], "a key holding a NUL byte",
           build([], kvs=[e.kv("general.na\0me", T_U32, 1)]))
    yield ("J_empty_tensor_name", "J", "reject", ["name", "empty"], "a tensor name of length 0",
           build([("", "f32", [8])]))
    yield ("J_tensor_name_with_nul", "J", "reject", ["name", "nul"],
           "a tensor name holding a NUL byte", build([("a\0b", "f32", [8])]))
    yield ("J_bad_magic", "J", "reject", ["magic", "not a gguf", "gguf"], "magic 'GGML'",
           build(BASE_TENSORS, magic=b"GGML"))

    # ----------------------------------------------------------------- K: alignment, offsets
    al = ["alignment"]
    for a in (0, 3, 48, 100, 1 << 31):
        tag = "2p31" if a == 1 << 31 else str(a)
        yield (f"K_align_{tag}", "K", "reject", al, f"general.alignment = {a} (u32)",
               build(BASE_TENSORS, kvs=default_kvs(e) + [e.kv("general.alignment", T_U32, a)]))
    # The same bad values in files laid out consistently with them (data start and offsets
    # multiples of a): only the power-of-two rule itself can reject these.
    for a in (3, 48, 100):
        yield (f"K_align_{a}_consistent", "K", "reject", al,
               f"general.alignment = {a}, every offset a multiple of {a}",
               build(BASE_TENSORS, alignment=a))
    yield ("K_align_0_no_tensors", "K", "reject", al, "general.alignment = 0, no tensors",
           build([], kvs=default_kvs(e) + [e.kv("general.alignment", T_U32, 0)]))
    for vt, val, tag in ((T_U64, 32, "u64"), (T_I32, 32, "i32"), (T_STR, "32", "string"),
                         (T_F32, 32.0, "f32"), (T_U16, 32, "u16")):
        yield (f"K_align_type_{tag}", "K", "reject", al + ["type"],
               f"general.alignment = 32 stored as {tag} instead of u32",
               build(BASE_TENSORS, kvs=default_kvs(e) + [e.kv("general.alignment", vt, val)]))
    yield ("K_align_array", "K", "reject", al + ["type", "array"],
           "general.alignment an array",
           build(BASE_TENSORS, kvs=default_kvs(e) + [
               e.kv("general.alignment", T_ARR, (T_U32, [32]))]))
    off = ["offset"]
    yield ("K_offset_unaligned", "K", "reject", off + ["align"],
           "second tensor at offset 4 (alignment 32)",
           build(BASE_TENSORS[:2], offsets=[0, 4], data_override=b"\0" * 512))
    yield ("K_offset_unaligned_64", "K", "reject", off + ["align"],
           "offset 32 with general.alignment 64",
           build(BASE_TENSORS[:2], alignment=64, offsets=[0, 160], data_override=b"\0" * 512))
    yield ("K_offset_overlap", "K", "reject", off + ["overlap"],
           "two tensors both at offset 0",
           build(BASE_TENSORS[:2], offsets=[0, 0], data_override=b"\0" * 512))
    yield ("K_offset_overlap_partial", "K", "reject", off + ["overlap"],
           "q4_0 [64,4] (144 bytes) at 0 and the next tensor at 128",
           build(BASE_TENSORS[:2], offsets=[0, 128], data_override=b"\0" * 512))
    yield ("K_offset_past_eof", "K", "reject", off + ["end of file", "eof", "beyond", "size"],
           "tensor offset 1 MiB in a file of < 1 KiB",
           build(BASE_TENSORS[:2], offsets=[0, 1 << 20]))
    yield ("K_data_past_eof", "K", "reject", off + ["end of file", "eof", "beyond", "size",
                                                    "truncat"],
           "last tensor's bytes run 16 bytes past the end of the file",
           build(BASE_TENSORS, truncate=len(base) - 16))
    # Data written right after the tensor infos, without padding the data section to the
    # alignment from the start of the file: a reader that does not align the data start
    # reads shifted tensors; one that does finds the last tensor running past the end.
    yield ("K_data_section_misaligned", "K", "reject",
           off + ["end of file", "eof", "beyond", "size", "truncat", "align"],
           "data section not padded to the alignment from the start of the file",
           build(BASE_TENSORS, data_pad=False))
    # Truncations at structural points of the base file.
    hdr_end = 24
    for cut, tag in ((0, "empty"), (3, "in_magic"), (4, "after_magic"), (8, "after_version"),
                     (16, "in_counts"), (hdr_end, "after_counts"), (hdr_end + 5, "in_first_key"),
                     (len(base) // 3, "in_kv"), (len(base) // 2, "in_middle"),
                     (len(base) - 200, "in_data"), (len(base) - 1, "last_byte")):
        yield (f"K_truncated_{tag}", "K", "reject",
               ["truncat", "end of file", "eof", "short", "size", "magic", "offset", "read",
                "beyond"], f"the base file cut to {cut} bytes", base[:cut])

    # ----------------------------------------------------------------- L: endianness
    be = Endian(">")
    endw = ["endian", "byte order", "swap"]
    yield ("L_big_endian", "L", "reject", endw,
           "gguf-py's big-endian layout: magic bytes 'GGUF', every other field big-endian",
           build(BASE_TENSORS, e=be, kvs=default_kvs(be)))
    yield ("L_big_endian_magic", "L", "reject", endw + ["magic"],
           "everything big-endian including the magic ('FUGG')",
           build(BASE_TENSORS, e=be, kvs=default_kvs(be), magic=0x46554747))


def seeds():
    """Small valid files for the fuzzers' seed corpus."""
    e = Endian()
    yield "seed_base.gguf", build(BASE_TENSORS)
    yield "seed_one_tensor.gguf", build([("w", "q4_0", [32, 1])], kvs=[
        e.kv("general.architecture", T_STR, "x")])
    yield "seed_align64.gguf", build(BASE_TENSORS[:3], alignment=64)
    yield "seed_kv_types.gguf", build([("w", "q4_K", [256, 1])], kvs=[
        e.kv("a.u8", T_U8, 1), e.kv("a.i64", T_I64, -5), e.kv("a.f64", T_F64, 2.0),
        e.kv("a.arr", T_ARR, (T_STR, ["p", "q"])), e.kv("a.b", T_BOOL, 0)])


def main(argv):
    if len(argv) == 3 and argv[1] == "--seeds":
        os.makedirs(argv[2], exist_ok=True)
        for name, data in seeds():
            with open(os.path.join(argv[2], name), "wb") as f:
                f.write(data)
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = []
    seen = set()
    for name, cls, expect, fields, why, data, *extra in cases():
        assert name not in seen, name
        seen.add(name)
        fn = name + ".gguf"
        with open(os.path.join(out, fn), "wb") as f:
            f.write(data)
        manifest.append({"file": fn, "cls": cls, "expect": expect, "fields": fields,
                         "why": why, "size": len(data), **(extra[0] if extra else {})})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"make_corpus: {len(manifest)} files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
