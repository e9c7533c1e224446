#!/usr/bin/env python3
"""Bit-exact cross-check of every type in qmm's table against gguf.quants and ggml.

The types come from the library at run time (ctypes on QMM_LIB: every id 0..63 through
qmm_type_is_supported, qmm_type_name, qmm_type_block_size and qmm_type_block_bytes), so a
type is checked as soon as it is in the table. For each:

  table       block size and bytes equal gguf.constants.GGML_QUANT_SIZES and ggml's; the
              name is ggml's (ggml_type_name) and qmm_type_from_name finds the id again;
  dequantize  qmm_dequantize_rows equals gguf.quants.dequantize and ggml's compiled
              dequantize_row_<name> (libggml-base of the ggml-py package), NaN equal to NaN
              whatever its payload and sign, everything else bit for bit, on
                - random packed bytes with enough blocks that every codebook index, grid
                  entry, sign pattern and sub-block scale is reached: counted per type from
                  the byte fields (FIELDS below), a shortfall is a failure. Scale fields are
                  kept finite there, with extreme f16 scales planted (0x0001, 0x03FF, 0x0400,
                  0x7BFF, negatives, +-0; the bf16/f32 equivalents for those kinds), every
                  E8M0 byte 0x00..0xFF (mxfp4) and every UE4M3 byte 0x00..0xFF at each of
                  nvfp4's four scale positions;
                - random bytes with nothing kept finite (Inf and NaN scales), all-zero
                  blocks and all-0xFF blocks; for f16 and bf16 all 65536 bit patterns;
  quantize    a type with qmm_type_has_quantizer: the bytes of qmm_quantize_rows equal
              gguf.quants.quantize where gguf-py quantizes the type and ggml's
              quantize_row_<name>_ref where ggml exports it, on normal, uniform,
              heavy-tailed, all-zero, constant and rounding-tie rows and on block maxima at
              the f16 edges; a type without one: qmm_quantize_rows returns
              QMM_ERR_UNSUPPORTED and writes nothing;
  validate    qmm_validate_rows accepts finite scales (the largest finite f16, E8M0 0xFE,
              UE4M3 0x7E and 0xFE included) and returns QMM_ERR_NUMERIC naming the row and
              block for each scale field set to a non-finite value: f16/bf16/f32 Inf and NaN,
              E8M0 0xFF, UE4M3 0x7F and 0xFF (NaN in the MX and E4M3 definitions).

A gguf type missing from qmm's table is a failure (every gguf type except Q8_1, Q1_0, I8, I16,
I32, I64 and F64, which are not qmm weight types), and so is a missing ggml-py or a missing
ggml function; QMM_REQUIRE_ALL_TYPES=0 makes them SKIP lines instead.
Env: QMM_LIB (the built libqmm.so), QMM_SOURCE_DIR (optional: where include/qmm.h is).
Exit 0 pass, 1 fail, 77 skipped (the gguf package is missing).
`test_gguf_quants.py --self-test` runs the same checks with ggml's functions standing in for
libqmm and every gguf type in the table: it tests the
test (the coverage counts, gguf.quants against ggml) on types qmm does not have yet.
"""
import ctypes
import glob
import os
import re
import sys

import numpy as np

try:
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf import quants as gq
except Exception as e:  # pragma: no cover
    print(f"SKIP: python package gguf not importable: {e}")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
STRICT = os.environ.get("QMM_REQUIRE_ALL_TYPES", "1") == "1"
# gguf types that are not qmm weight types: never required.
NOT_QMM_TYPES = {"Q8_1", "Q1_0", "I8", "I16", "I32", "I64", "F64"}
QMM_OK, QMM_ERR_UNSUPPORTED, QMM_ERR_NUMERIC = 0, 2, 7

failures = []
skips = []


def fail(msg):
    failures.append(msg)
    print(f"MISMATCH: {msg}", flush=True)


def skip(msg):
    """Something not checked: a SKIP line, or a failure with QMM_REQUIRE_ALL_TYPES=1."""
    skips.append(msg)
    if STRICT:
        failures.append(msg)
        print(f"MISSING (QMM_REQUIRE_ALL_TYPES=1): {msg}", flush=True)
    else:
        print(f"SKIP: {msg}", flush=True)


# ---------------------------------------------------------------------------------------
# Block layout knowledge (ggml-common.h), independent of qmm's own table
# ---------------------------------------------------------------------------------------

# The float scale fields of each block, by gguf type name: (byte offset, kind, how many
# consecutive fields). Kinds: f16, bf16, f32 (IEEE); e8m0 and ue4m3 (one byte each);
# f16_iq1m (iq1_m's f16, spread over the top nibbles of the four little-endian uint16 at the
# offset). The element types' one element is their "scale".
SCALES = {
    "F32": [(0, "f32", 1)], "F16": [(0, "f16", 1)], "BF16": [(0, "bf16", 1)],
    "Q4_0": [(0, "f16", 1)],
    "Q4_1": [(0, "f16", 2)],     # d, m
    "Q5_0": [(0, "f16", 1)],
    "Q5_1": [(0, "f16", 2)],     # d, m
    "Q8_0": [(0, "f16", 1)],
    "Q2_K": [(80, "f16", 2)],    # d, dmin after scales[16], qs[64]
    "Q3_K": [(108, "f16", 1)],   # d after hmask[32], qs[64], scales[12]
    "Q4_K": [(0, "f16", 2)],     # d, dmin
    "Q5_K": [(0, "f16", 2)],     # d, dmin
    "Q6_K": [(208, "f16", 1)],   # d after ql[128], qh[64], scales[16]
    "Q8_K": [(0, "f32", 1)],
    "IQ2_XXS": [(0, "f16", 1)], "IQ2_XS": [(0, "f16", 1)], "IQ2_S": [(0, "f16", 1)],
    "IQ3_XXS": [(0, "f16", 1)], "IQ3_S": [(0, "f16", 1)], "IQ1_S": [(0, "f16", 1)],
    "IQ1_M": [(48, "f16_iq1m", 1)],  # scales[8] after qs[32], qh[16]
    "IQ4_NL": [(0, "f16", 1)], "IQ4_XS": [(0, "f16", 1)],
    "TQ1_0": [(52, "f16", 1)],   # d after qs[48], qh[4]
    "TQ2_0": [(64, "f16", 1)],   # d after qs[64]
    "MXFP4": [(0, "e8m0", 1)],
    "NVFP4": [(0, "ue4m3", 4)],  # one per 16 elements
}
KIND_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "e8m0": 1, "ue4m3": 1, "f16_iq1m": 8}

# Finite values at the edges of each float kind, planted into random blocks.
EXTREME = {
    # smallest subnormal, largest subnormal, smallest normal, largest finite; the same
    # negative; +0, -0; +-1
    "f16": [0x0001, 0x03FF, 0x0400, 0x7BFF, 0x8001, 0x83FF, 0x8400, 0xFBFF, 0x0000, 0x8000,
            0x3C00, 0xBC00],
    "bf16": [0x0001, 0x007F, 0x0080, 0x7F7F, 0x8001, 0x807F, 0x8080, 0xFF7F, 0x0000, 0x8000],
    "f32": [0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x80000001, 0x807FFFFF,
            0x80800000, 0xFF7FFFFF, 0x00000000, 0x80000000],
}
EXTREME["f16_iq1m"] = EXTREME["f16"]
# Non-finite values per kind, for validation.
NONFINITE = {
    "f16": [0x7C00, 0xFC00, 0x7E00, 0x7C01], "f16_iq1m": [0x7C00, 0xFE00],
    "bf16": [0x7F80, 0xFF80, 0x7FC0], "f32": [0x7F800000, 0xFF800000, 0x7FC00000],
    "e8m0": [0xFF], "ue4m3": [0x7F, 0xFF],
}
# Finite values at the edge, which validation must accept.
FINITE_EDGE = {"f16": 0x7BFF, "f16_iq1m": 0xFBFF, "bf16": 0x7F7F, "f32": 0x7F7FFFFF,
               "e8m0": 0xFE, "ue4m3": 0x7E}


def u16s(q, offs):
    offs = np.asarray(offs)
    return q[:, offs].astype(np.uint32) | (q[:, offs + 1].astype(np.uint32) << 8)


def u32s(q, offs):
    offs = np.asarray(offs)
    return u16s(q, offs) | (u16s(q, offs + 2) << 16)


def get_field(q, off, kind):
    """The bits of one scale field of every block (uint32 per block)."""
    if kind in ("f16", "bf16"):
        return u16s(q, [off])[:, 0]
    if kind == "f32":
        return u32s(q, [off])[:, 0]
    if kind in ("e8m0", "ue4m3"):
        return q[:, off].astype(np.uint32)
    sc = u16s(q, off + 2 * np.arange(4))  # f16_iq1m
    return ((sc[:, 0] >> 12) | ((sc[:, 1] >> 8) & 0x00F0) | ((sc[:, 2] >> 4) & 0x0F00) |
            (sc[:, 3] & 0xF000))


def set_field(q, rows, off, kind, v):
    """Set one scale field of blocks `rows` (an index array or slice) to bits v."""
    v = np.asarray(v, dtype=np.uint64)
    if kind == "f16_iq1m":
        for i in range(4):
            hi = q[rows, off + 2 * i + 1]
            q[rows, off + 2 * i + 1] = (hi & 0x0F) | (((v >> (4 * i)) & 0xF) << 4).astype(np.uint8)
        return
    for i in range(KIND_BYTES[kind]):
        q[rows, off + i] = ((v >> (8 * i)) & 0xFF).astype(np.uint8)


def nonfinite(kind, bits):
    if kind in ("f16", "f16_iq1m"):
        return (bits & 0x7C00) == 0x7C00
    if kind == "bf16":
        return (bits & 0x7F80) == 0x7F80
    if kind == "f32":
        return (bits & 0x7F800000) == 0x7F800000
    if kind == "e8m0":
        return bits == 0xFF
    return (bits & 0x7F) == 0x7F  # ue4m3


# What every block's byte fields index, by gguf type name: a function of the packed blocks
# (nblocks, block bytes) giving (label, values, how many distinct values exist). The random
# data must reach every value of every field; the test counts it. Offsets are ggml-common.h's.
def _nib(q, lo, hi):
    x = q[:, lo:hi]
    return np.concatenate([(x & 15).ravel(), (x >> 4).ravel()])


def _bytes_at_offsets(q, offs):
    """Byte values at each offset, as offset*256 + value: every value at every offset."""
    offs = np.asarray(offs)
    return (offs[None, :].astype(np.int64) * 256 + q[:, offs]).ravel(), 256 * len(offs)


def _fields_iq2_xxs(q):
    g = [2 + 8 * ib + l for ib in range(8) for l in range(4)]
    aux = u32s(q, 2 + 8 * np.arange(8) + 4)
    return [("iq2xxs_grid index", q[:, g].ravel(), 256),
            ("ksigns index", np.concatenate([(aux >> (7 * l)) & 127 for l in range(4)]), 128),
            ("4-bit sub-block scale", aux >> 28, 16)]


def _fields_iq2_xs(q):
    v = u16s(q, 2 + 2 * np.arange(32))
    return [("iq2xs_grid index", v & 511, 512), ("ksigns index", v >> 9, 128),
            ("4-bit sub-block scale", _nib(q, 66, 74), 16)]


def _fields_iq2_s(q):
    qs, qh = q[:, 2:34].astype(np.uint32), q[:, 66:74].astype(np.uint32)
    idx = [qs[:, 4 * ib + l] | ((qh[:, ib] << (8 - 2 * l)) & 0x300)
           for ib in range(8) for l in range(4)]
    return [("iq2s_grid index", np.concatenate(idx), 1024),
            ("sign byte", q[:, 34:66].ravel(), 256),
            ("4-bit sub-block scale", _nib(q, 74, 82), 16)]


def _fields_iq3_xxs(q):
    aux = u32s(q, 66 + 4 * np.arange(8))
    return [("iq3xxs_grid index", q[:, 2:66].ravel(), 256),
            ("ksigns index", np.concatenate([(aux >> (7 * l)) & 127 for l in range(4)]), 128),
            ("4-bit sub-block scale", aux >> 28, 16)]


def _fields_iq3_s(q):
    qs, qh = q[:, 2:66].astype(np.uint32), q[:, 66:74].astype(np.uint32)
    idx = [qs[:, j] | (((qh[:, j // 8] >> (j % 8)) & 1) << 8) for j in range(64)]
    return [("iq3s_grid index", np.concatenate(idx), 512),
            ("sign byte", q[:, 74:106].ravel(), 256),
            ("4-bit sub-block scale", _nib(q, 106, 110), 16)]


def _fields_iq1_s(q):
    qs, qh = q[:, 2:34].astype(np.uint32), u16s(q, 34 + 2 * np.arange(8))
    idx = [qs[:, 4 * ib + l] | (((qh[:, ib] >> (3 * l)) & 7) << 8)
           for ib in range(8) for l in range(4)]
    return [("iq1s_grid index", np.concatenate(idx), 2048),
            ("3-bit sub-block scale", (qh >> 12) & 7, 8), ("delta sign", qh >> 15, 2)]


def _fields_iq1_m(q):
    qs, qh = q[:, 0:32].astype(np.uint32), q[:, 32:48].astype(np.uint32)
    idx = [qs[:, 4 * ib + l] | (((qh[:, 2 * ib + l // 2] >> (4 * (l % 2))) & 7) << 8)
           for ib in range(8) for l in range(4)]
    sc = u16s(q, 48 + 2 * np.arange(4))
    sub = [(sc[:, ib // 2] >> (6 * (ib % 2) + s)) & 7 for ib in range(8) for s in (0, 3)]
    return [("iq1s_grid index", np.concatenate(idx), 2048),
            ("delta sign", np.concatenate([(qh >> 3) & 1, (qh >> 7) & 1]), 2),
            ("3-bit sub-block scale", np.concatenate(sub), 8)]


def _fields_iq4_xs(q):
    sh, sl = u16s(q, [2])[:, 0], q[:, 4:8].astype(np.uint32)
    ls = [((sl[:, ib // 2] >> (4 * (ib % 2))) & 15) | (((sh >> (2 * ib)) & 3) << 4)
          for ib in range(8)]
    return [("6-bit sub-block scale", np.concatenate(ls), 64),
            ("kvalues_iq4nl index", _nib(q, 8, 136), 16)]


def _fields_nvfp4(q):
    return [(f"UE4M3 scale byte {s}", q[:, s], 256) for s in range(4)] + [
        ("E2M1 nibble", _nib(q, 4, 36), 16)]


FIELDS = {
    "IQ2_XXS": _fields_iq2_xxs, "IQ2_XS": _fields_iq2_xs, "IQ2_S": _fields_iq2_s,
    "IQ3_XXS": _fields_iq3_xxs, "IQ3_S": _fields_iq3_s, "IQ1_S": _fields_iq1_s,
    "IQ1_M": _fields_iq1_m, "IQ4_XS": _fields_iq4_xs, "NVFP4": _fields_nvfp4,
    "IQ4_NL": lambda q: [("kvalues_iq4nl index", _nib(q, 2, 18), 16)],
    "TQ1_0": lambda q: [("base-3 byte of qs", q[:, 0:48].ravel(), 256),
                        ("base-3 byte of qh", q[:, 48:52].ravel(), 256)],
    "TQ2_0": lambda q: [("byte of four 2-bit values", q[:, 0:64].ravel(), 256)],
    "MXFP4": lambda q: [("E8M0 scale byte", q[:, 0], 256), ("E2M1 nibble", _nib(q, 1, 17), 16)],
    "F16": lambda q: [("binary16 bit pattern", u16s(q, [0])[:, 0], 65536)],
    "BF16": lambda q: [("bfloat16 bit pattern", u16s(q, [0])[:, 0], 65536)],
    # finite f32 (the random set keeps them finite): every exponent but all-ones
    "F32": lambda q: [("binary32 exponent", (u32s(q, [0])[:, 0] >> 23) & 0xFF, 255)],
}


def fields_of(gname, bb, q):
    """FIELDS for the codebook and fp4 types; for the legacy and K types, whose quants and
    sub-block scales are plain bit fields of the bytes, every byte value at every byte
    offset outside the scale fields. (A field that spans two bytes, as q4_K's upper 6-bit
    scales do, is then reached with probability 1 - 64 * (63/64)^(n*f) for n blocks and f
    fields per block: 1 - 3e-26 for n = 4096, f = 4.)"""
    if gname in FIELDS:
        return FIELDS[gname](q)
    scale_bytes = {off + i for off, kind, cnt in SCALES[gname]
                   for i in range(KIND_BYTES[kind] * cnt)}
    offs = [o for o in range(bb) if o not in scale_bytes]
    v, n = _bytes_at_offsets(q, offs)
    return [(f"byte value at each of {len(offs)} offsets", v, n)]


# ---------------------------------------------------------------------------------------
# Libraries
# ---------------------------------------------------------------------------------------

def load_qmm():
    path = os.environ.get("QMM_LIB")
    if not path or not os.path.exists(path):
        print(f"FAIL: QMM_LIB is not set to the built libqmm.so (got {path!r})")
        sys.exit(1)
    lib = ctypes.CDLL(path)
    vp, i64 = ctypes.c_void_p, ctypes.c_int64
    for fn in (lib.qmm_quantize_rows, lib.qmm_dequantize_rows):
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_int, vp, vp, i64, i64]
    lib.qmm_validate_rows.restype = ctypes.c_int
    lib.qmm_validate_rows.argtypes = [ctypes.c_int, vp, i64, i64, ctypes.c_size_t]
    lib.qmm_type_is_supported.restype = ctypes.c_bool
    lib.qmm_type_is_supported.argtypes = [ctypes.c_int]
    lib.qmm_type_has_quantizer.restype = ctypes.c_bool
    lib.qmm_type_has_quantizer.argtypes = [ctypes.c_int]
    lib.qmm_type_name.restype = ctypes.c_char_p
    lib.qmm_type_name.argtypes = [ctypes.c_int]
    lib.qmm_type_from_name.restype = ctypes.c_int
    lib.qmm_type_from_name.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    lib.qmm_type_block_size.restype = ctypes.c_int64
    lib.qmm_type_block_size.argtypes = [ctypes.c_int]
    lib.qmm_type_block_bytes.restype = ctypes.c_size_t
    lib.qmm_type_block_bytes.argtypes = [ctypes.c_int]
    lib.qmm_last_error.restype = ctypes.c_char_p
    return lib


def load_ggml():
    """ggml's compiled library from the ggml-py package (imported as `ggml`), or None."""
    try:
        import ggml  # noqa: F401  (the PyPI package ggml-py)
    except Exception as e:
        skip(f"python package 'ggml' (pip install ggml-py) not importable ({e}): "
             "nothing is compared with ggml's compiled code")
        return None
    pkg_dir = os.path.dirname(ggml.__file__)
    for path in sorted(glob.glob(os.path.join(pkg_dir, "lib", "libggml-base.so*")) +
                       glob.glob(os.path.join(pkg_dir, "**", "libggml*.so*"), recursive=True)):
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        if hasattr(lib, "dequantize_row_q4_0") and hasattr(lib, "ggml_type_name"):
            lib.ggml_type_name.restype = ctypes.c_char_p
            lib.ggml_type_name.argtypes = [ctypes.c_int]
            lib.ggml_blck_size.restype = ctypes.c_int64
            lib.ggml_blck_size.argtypes = [ctypes.c_int]
            lib.ggml_type_size.restype = ctypes.c_size_t
            lib.ggml_type_size.argtypes = [ctypes.c_int]
            lib.ggml_quantize_init.restype = None
            lib.ggml_quantize_init.argtypes = [ctypes.c_int]
            print(f"ggml library: {path}")
            return lib
    skip(f"no library under {pkg_dir} exports dequantize_row_q4_0: nothing is compared "
         "with ggml's compiled code")
    return None


def ggml_fn(gg, name):
    if gg is None or not hasattr(gg, name):
        return None
    f = getattr(gg, name)
    f.restype = None
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    return f


def ggml_dequantizer(gg, name):
    """ggml's row dequantizer of a type, by qmm's (= ggml's) type name; f32 has none (a copy)."""
    return ggml_fn(gg, {"f16": "ggml_fp16_to_fp32_row", "bf16": "ggml_bf16_to_fp32_row"}.get(
        name, f"dequantize_row_{name}"))


def ggml_quantizer(gg, name):
    return ggml_fn(gg, {"f16": "ggml_fp32_to_fp16_row", "bf16": "ggml_fp32_to_bf16_row_ref"}.get(
        name, f"quantize_row_{name}_ref"))


def qmm_type_count():
    """QMM_TYPE_COUNT from include/qmm.h (ids checked: at least 0..63)."""
    src = os.environ.get("QMM_SOURCE_DIR") or os.path.dirname(HERE)
    try:
        with open(os.path.join(src, "include", "qmm.h")) as f:
            m = re.search(r"QMM_TYPE_COUNT\s*=\s*(\d+)", f.read())
        return int(m.group(1)) if m else None
    except OSError:
        return None


class Type:
    def __init__(self, tid, name, gt, bs, bb, has_q):
        self.id, self.name, self.gt, self.bs, self.bb, self.has_q = tid, name, gt, bs, bb, has_q

    @property
    def gname(self):
        return self.gt.name


def table(lib, gg):
    """Every supported id of qmm's table, checked against gguf's and ggml's type facts."""
    count = qmm_type_count()
    types = []
    for t in range(max(64, count or 0)):
        sup = bool(lib.qmm_type_is_supported(t))
        name = lib.qmm_type_name(t)
        bs, bb = lib.qmm_type_block_size(t), lib.qmm_type_block_bytes(t)
        if not sup:
            if name is not None or bs != 0 or bb != 0:
                fail(f"id {t}: unsupported but name {name!r}, block ({bs}, {bb})")
            continue
        if name is None or bs <= 0 or bb <= 0:
            fail(f"id {t}: supported but name {name!r}, block ({bs}, {bb})")
            continue
        name = name.decode()
        if count is not None and t >= count:
            fail(f"{name}: id {t} >= QMM_TYPE_COUNT ({count})")
        back = ctypes.c_int(-1)
        if lib.qmm_type_from_name(name.encode(), ctypes.byref(back)) != QMM_OK or back.value != t:
            fail(f"{name}: qmm_type_from_name gives {back.value}, not {t}")
        try:
            gt = T(t)
        except ValueError:
            fail(f"{name}: id {t} is not a GGMLQuantizationType")
            continue
        if gt.name.lower() != name.lower():
            fail(f"id {t}: qmm name {name!r}, gguf name {gt.name!r}")
        if gguf.GGML_QUANT_SIZES[gt] != (bs, bb):
            fail(f"{name}: qmm block ({bs}, {bb}) != gguf {gguf.GGML_QUANT_SIZES[gt]}")
        if gg is not None:
            gname = gg.ggml_type_name(t)
            if gname is None or gname.decode() != name or gg.ggml_blck_size(t) != bs or \
                    gg.ggml_type_size(t) != bb:
                fail(f"{name}: ggml says {gname!r}, block ({gg.ggml_blck_size(t)}, "
                     f"{gg.ggml_type_size(t)})")
        if gt.name not in SCALES:
            fail(f"{name}: this test does not know the block layout of the type (add it to "
                 "SCALES and FIELDS)")
            continue
        types.append(Type(t, name, gt, bs, bb, bool(lib.qmm_type_has_quantizer(t))))
    have = {ty.gname for ty in types}
    for gt in T:
        if gt.name not in have and gt.name not in NOT_QMM_TYPES:
            skip(f"{gt.name.lower()} (id {gt.value}): not in qmm's table yet")
    return types


# ---------------------------------------------------------------------------------------
# Packed data
# ---------------------------------------------------------------------------------------

def n_blocks_for(ty):
    if ty.bs == 1:
        return 65536
    # 256-element blocks: 4096 (32 grid indices per iq1_s block: 2048 * exp(-4096*32/2048)
    # = 3e-25 is the chance of one index missing); 32/64-element blocks: 8192
    return 4096 if ty.bs >= 256 else 8192


def random_set(ty, rng):
    """Random packed blocks, scale fields finite per ggml's decoding, extremes planted;
    E8M0/UE4M3 bytes swept over 0x00..0xFF. f16/bf16: every bit pattern once."""
    nb = n_blocks_for(ty)
    if ty.gname in ("F16", "BF16"):
        return np.arange(65536, dtype=np.uint16).view(np.uint8).reshape(nb, 2).copy()
    q = rng.integers(0, 256, (nb, ty.bb), dtype=np.uint8)
    for off, kind, cnt in SCALES[ty.gname]:
        for c in range(cnt):
            o = off + c * KIND_BYTES[kind]
            if kind in ("e8m0", "ue4m3"):  # every byte (ggml decodes each to a finite value)
                set_field(q, slice(None), o, kind, (np.arange(nb) + 97 * c) % 256)
                continue
            bits = get_field(q, o, kind)
            clear = {"f32": 0x40000000}.get(kind, 0x4000)  # an exponent bit: now finite
            bits = np.where(nonfinite(kind, bits), bits & ~np.uint32(clear), bits)
            set_field(q, slice(None), o, kind, bits)
            ext = EXTREME[kind]
            at = rng.permutation(nb)[: 4 * len(ext)]  # each extreme in 4 random blocks
            set_field(q, at, o, kind, np.repeat(np.array(ext, dtype=np.uint64), 4))
    return q


def packed_sets(ty, rng):
    """(label, blocks) pairs dequantized by every implementation."""
    sets = [("random", random_set(ty, rng))]
    if ty.gname not in ("F16", "BF16"):  # those are exhaustive already
        sets.append(("raw random (Inf/NaN scales)",
                     rng.integers(0, 256, (256 if ty.bs > 1 else 4096, ty.bb), dtype=np.uint8)))
    sets.append(("all-zero blocks", np.zeros((16, ty.bb), np.uint8)))
    sets.append(("all-0xFF blocks", np.full((4, ty.bb), 0xFF, np.uint8)))
    return sets


def check_coverage(ty, q):
    out = []
    for label, values, n in fields_of(ty.gname, ty.bb, q):
        got = np.unique(np.asarray(values)).size
        if got != n:
            fail(f"coverage {ty.name}: {label} reached {got} of {n} values (more blocks needed)")
        out.append(f"{label} {got}/{n}")
    return out


# ---------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------

def same_floats(a, b):
    """Bit for bit, except that any NaN equals any NaN. Returns the first differing index."""
    a, b = a.reshape(-1), b.reshape(-1)
    ne = (a.view(np.uint32) != b.view(np.uint32)) & ~(np.isnan(a) & np.isnan(b))
    idx = np.flatnonzero(ne)
    return int(idx[0]) if idx.size else None


def report_float_diff(what, ty, q, ours, ref, i, who):
    blk = i // ty.bs
    raw = q.reshape(-1, ty.bb)[blk]
    fail(f"{what}: element {i} (block {blk}, element {i % ty.bs}): qmm {ours[i]!r} "
         f"(0x{ours.view(np.uint32)[i]:08x}) != {who} {ref[i]!r} (0x{ref.view(np.uint32)[i]:08x}); "
         f"block bytes {raw.tobytes().hex()}")


def qmm_dequantize(lib, ty, q):
    """Rows of up to 4 blocks (the row loop and the block loop both run)."""
    nb = q.shape[0]
    per_row = 4 if nb % 4 == 0 else 1
    rows = nb // per_row
    out = np.full(nb * ty.bs, np.nan, np.float32)
    src = np.ascontiguousarray(q)
    st = lib.qmm_dequantize_rows(ty.id, src.ctypes.data, out.ctypes.data, rows, per_row * ty.bs)
    if st != QMM_OK:
        fail(f"dequantize {ty.name}: qmm_dequantize_rows returned {st}: "
             f"{lib.qmm_last_error().decode()}")
        return None
    return out


def check_dequantize(lib, gg, ty, rng):
    gg_dq = ggml_dequantizer(gg, ty.name)
    if gg is not None and gg_dq is None and ty.name != "f32":
        skip(f"dequantize {ty.name}: ggml exports no dequantizer for it")
    probe = np.zeros((1, ty.bb), np.uint8)
    try:
        gq.dequantize(probe, ty.gt)
        has_gguf = True
    except NotImplementedError:
        has_gguf = False
        print(f"  note: gguf.quants does not dequantize {ty.name}")
    n_values, cover = 0, []
    for label, q in packed_sets(ty, rng):
        if label == "random":
            cover = check_coverage(ty, q)
        what = f"dequantize {ty.name} [{label}]"
        ours = qmm_dequantize(lib, ty, q)
        if ours is None:
            return
        n_values += ours.size
        if has_gguf:
            with np.errstate(all="ignore"):
                ref = np.ascontiguousarray(gq.dequantize(q, ty.gt), dtype=np.float32).reshape(-1)
            i = same_floats(ours, ref)
            if i is not None:
                report_float_diff(what, ty, q, ours, ref, i, "gguf.quants")
        if ty.name == "f32":  # ggml's f32 is the bytes themselves
            ref = np.ascontiguousarray(q).view(np.float32).reshape(-1)
            who = "the input bits"
        elif gg_dq is not None:
            ref = np.full(ours.size, -np.inf, np.float32)
            src = np.ascontiguousarray(q)
            gg_dq(src.ctypes.data, ref.ctypes.data, ours.size)
            who = "ggml"
        else:
            continue
        i = same_floats(ours, ref)
        if i is not None:
            report_float_diff(what, ty, q, ours, ref, i, who)
    refs = " and ".join(n for n, ok in (("gguf.quants", has_gguf),
                                         ("ggml", gg_dq is not None or ty.name == "f32")) if ok)
    print(f"  dequantize {ty.name:7s}: {n_values} values compared with {refs or 'nothing'}; "
          f"reached: {', '.join(cover)}", flush=True)


# ---------------------------------------------------------------------------------------
# Quantizers
# ---------------------------------------------------------------------------------------

def quantize_rows_for(bs, rng):
    """Named float32 rows (k = 256, a whole number of blocks of any size)."""
    k = 256
    rows = {}
    for mag in (1.0, 1e-3, 1e3, 3e4):
        rows[f"normal x{mag:g}"] = rng.standard_normal((8, k)) * mag
    rows["uniform [-1,1)"] = rng.uniform(-1, 1, (8, k))
    rows["uniform [0,1) + offset"] = rng.uniform(0, 1, (4, k)) + 2.0
    rows["heavy tail"] = rng.standard_cauchy((4, k)).clip(-1e4, 1e4)
    rows["student t2"] = rng.standard_t(2, (4, k))
    rows["all zero"] = np.zeros((1, k))
    rows["all +0.7"] = np.full((1, k), 0.7)
    rows["all -3.25"] = np.full((1, k), -3.25)
    r = np.zeros((2, k))
    r[0, 200] = 1.0
    r[1, ::16] = -2.0
    rows["sparse"] = r
    neg = rng.uniform(-1, 1, (4, k))
    for i in range(4):
        neg[i, (np.arange(k) % 32) == (7 * i + 3) % 32] = -10.0 - i
    rows["negative largest magnitude"] = neg
    # half-integer grids: x*id hits .5 exactly for q8_0 (amax 127), q4_0 (max -8),
    # q5_0 (max -16), q4_1/q5_1 (min 0, max 15 / 31): the rounding ties
    base = rng.integers(-32, 33, (5, k)) * 0.5
    base[0, ::32] = 127.0
    base[0] = base[0].clip(-127, 127)
    base[1] = base[1].clip(-7.5, 7.5)
    base[1, ::32] = -8.0
    base[2] = base[2].clip(-15.5, 15.5)
    base[2, ::32] = -16.0
    base[3] = np.abs(base[3]).clip(0, 15)
    base[3, ::32] = 0.0
    base[3, 1::32] = 15.0
    base[4] = np.abs(base[4]).clip(0, 31)
    base[4, ::32] = 0.0
    base[4, 1::32] = 31.0
    rows["rounding ties"] = base
    # E2M1 (mxfp4, nvfp4): block max 6*2^e sets the scale to 2^(e-1) (ggml's halved
    # kvalues); the midpoints between neighbouring E2M1 values are exact ties
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0])
    t = rng.choice(mids, (4, k)) * np.where(rng.random((4, k)) < 0.5, -1, 1)
    t[:, ::16] = 6.0
    rows["e2m1 ties"] = t * (2.0 ** np.array([0, -3, 4, -10]))[:, None]
    # ternary (tq1_0, tq2_0): +-max/2 round away from zero
    rows["ternary ties"] = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], (2, k)) * 3.0
    # scales that land on f16 subnormals (d = 2^-24 .. 1023*2^-24), near 0x7BFF, and beyond
    for amax in (8 * 2.0**-24, 16 * 2.0**-24, 127 * 2.0**-24, 8 * 1023 * 2.0**-24,
                 127 * 1023 * 2.0**-24, 1e-9, 8 * 65504.0, 16 * 65504.0, 127 * 65504.0,
                 15 * 65504.0, 31 * 65504.0, 1e7):
        r = rng.uniform(-1, 1, (2, k))
        r[:, ::32] = -1.0
        rows[f"block max {amax:.4g}"] = r * amax
    if bs == 1:  # values around the f16/bf16 ranges, for the element types only
        rows["f16 edges"] = np.array([[65504, 65519.99, 65520, -65520, 6.1035e-05, 5.96e-08,
                                       2.98e-08, 2.99e-08, 1e-40, -1e-45, 3.0e38, -3.4e38] * 21
                                      + [0.0] * 4])
    return {name: np.ascontiguousarray(v, dtype=np.float32) for name, v in rows.items()}


def first_byte_diff(what, ty, ours, ref, who):
    idx = np.flatnonzero(ours.reshape(-1) != ref.reshape(-1))
    if idx.size:
        r, byte = divmod(int(idx[0]), ours.shape[1])
        fail(f"{what}: row {r} byte {byte} (block {byte // ty.bb}, offset {byte % ty.bb}): "
             f"qmm 0x{ours[r, byte]:02x} != {who} 0x{ref[r, byte]:02x}")


def zero_block_quants(lib, ty, ours, ref):
    """Mask of the bytes of blocks that decode to all zeros (+0 or -0) on both sides, with equal f16 d at
    offset 0, other than that d: the bytes a zero-scale block leaves unspecified."""
    mask = np.zeros(ours.shape, bool)
    if ty.bs < 32 or ty.name not in ("iq4_nl", "iq4_xs"):
        return mask
    rows, rb = ours.shape
    k = rb // ty.bb * ty.bs
    out_a = np.empty((rows, k), np.float32)
    out_b = np.empty((rows, k), np.float32)
    lib.qmm_dequantize_rows(ty.id, np.ascontiguousarray(ours).ctypes.data, out_a.ctypes.data, rows, k)
    lib.qmm_dequantize_rows(ty.id, np.ascontiguousarray(ref).ctypes.data, out_b.ctypes.data, rows, k)
    for r in range(rows):
        for b in range(rb // ty.bb):
            # +0 or -0: 0 * a negative codebook value is -0, so the sign follows the bytes too
            va = out_a[r, b * ty.bs:(b + 1) * ty.bs].view(np.uint32) & 0x7FFFFFFF
            vb = out_b[r, b * ty.bs:(b + 1) * ty.bs].view(np.uint32) & 0x7FFFFFFF
            lo = b * ty.bb
            if (va == 0).all() and (vb == 0).all() and (ours[r, lo:lo + 2] == ref[r, lo:lo + 2]).all():
                mask[r, lo + 2:lo + ty.bb] = True
    return mask


def check_quantize(lib, gg, ty, rng):
    k = 256
    rb = k // ty.bs * ty.bb
    if not ty.has_q:
        x = rng.standard_normal((2, k)).astype(np.float32)
        dst = np.full((2, rb), 0xA5, np.uint8)
        st = lib.qmm_quantize_rows(ty.id, x.ctypes.data, dst.ctypes.data, 2, k)
        if st != QMM_ERR_UNSUPPORTED:
            fail(f"quantize {ty.name}: no quantizer, but qmm_quantize_rows returned {st} "
                 f"(expected QMM_ERR_UNSUPPORTED)")
        if not (dst == 0xA5).all():
            fail(f"quantize {ty.name}: qmm_quantize_rows failed but wrote the output")
        print(f"  quantize   {ty.name:7s}: no qmm quantizer; qmm_quantize_rows returns "
              f"QMM_ERR_UNSUPPORTED and writes nothing", flush=True)
        return
    probe = np.zeros((1, ty.bs * 8), np.float32)
    try:
        gq.quantize(probe, ty.gt)
        has_gguf = True
    except NotImplementedError:
        has_gguf = False
    gg_q = ggml_quantizer(gg, ty.name)
    if gg_q is not None:
        gg.ggml_quantize_init(ty.id)  # the i-quants' grids; a no-op for the others
    elif gg is not None and ty.name != "f32":
        skip(f"quantize {ty.name}: ggml exports no reference quantizer for it")
    n_rows = n_unwritten = 0
    for rname, x in quantize_rows_for(ty.bs, rng).items():
        what = f"quantize {ty.name} [{rname}]"
        ours = np.full((x.shape[0], rb), 0xA5, np.uint8)
        st = lib.qmm_quantize_rows(ty.id, x.ctypes.data, ours.ctypes.data, x.shape[0], k)
        if st != QMM_OK:
            fail(f"{what}: qmm_quantize_rows returned {st}: {lib.qmm_last_error().decode()}")
            continue
        n_rows += x.shape[0]
        if has_gguf:
            with np.errstate(all="ignore"):
                ref = np.ascontiguousarray(gq.quantize(x, ty.gt)).view(np.uint8).reshape(
                    x.shape[0], -1)
            if ref.shape != ours.shape:
                fail(f"{what}: shape {ours.shape} != gguf {ref.shape}")
            else:
                first_byte_diff(what, ty, ours, ref, "gguf.quants")
        if gg_q is not None:
            # bytes ggml leaves unwritten (q8_K's bsums of an all-zero block) differ between
            # two runs into differently filled outputs: those are not compared
            ref, ref2 = np.full_like(ours, 0x5A), np.full_like(ours, 0xA5)
            gg_q(x.ctypes.data, ref.ctypes.data, x.size)
            gg_q(x.ctypes.data, ref2.ctypes.data, x.size)
            unwritten = ref != ref2
            # iq4_nl / iq4_xs: for a block of max |x| < 1e-15 ggml stores d = 0 and leaves the
            # quant bytes to whatever its stack held (not the output buffer): any quant bytes
            # are right there, since the block decodes to zeros whatever they are. Such a block
            # is compared by its decoded values (all zero on both sides) and its scale bytes only.
            unwritten |= zero_block_quants(lib, ty, ours, ref)
            n_unwritten += int(unwritten.sum())
            first_byte_diff(what, ty, np.where(unwritten, 0, ours), np.where(unwritten, 0, ref),
                            "ggml")
    refs = " and ".join(n for n, ok in (("gguf.quants", has_gguf), ("ggml", gg_q is not None))
                        if ok)
    if ty.name == "f32":
        refs = "gguf.quants (ggml's f32 is a copy)"
    note = f" ({n_unwritten} bytes ggml leaves unwritten not compared)" if n_unwritten else ""
    print(f"  quantize   {ty.name:7s}: {n_rows} rows of 256 compared byte for byte with "
          f"{refs or 'nothing (no reference has a quantizer for it)'}{note}", flush=True)
    if not refs:
        skip(f"quantize {ty.name}: neither gguf.quants nor ggml quantizes it")


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------

def check_validate(lib, ty, rng):
    nrows, bpr = 2, 3  # 2 rows of 3 blocks; faults planted in row 1, block 2
    q = rng.integers(0, 256, (nrows * bpr, ty.bb), dtype=np.uint8)
    fields = []
    for off, kind, cnt in SCALES[ty.gname]:
        for c in range(cnt):
            o = off + c * KIND_BYTES[kind]
            bits = get_field(q, o, kind)
            if kind == "e8m0":
                bits = np.where(bits == 0xFF, 0xFE, bits)
            elif kind == "ue4m3":
                bits = np.where(nonfinite(kind, bits), bits ^ 1, bits)
            else:
                bits = np.where(nonfinite(kind, bits),
                                bits & ~np.uint32({"f32": 0x40000000}.get(kind, 0x4000)), bits)
            set_field(q, slice(None), o, kind, bits)
            set_field(q, [0], o, kind, FINITE_EDGE[kind])
            if kind == "ue4m3":
                set_field(q, [1], o, kind, 0xFE)
            fields.append((o, kind))
    k = bpr * ty.bs
    rb = bpr * ty.bb
    st = lib.qmm_validate_rows(ty.id, q.ctypes.data, nrows, k, rb)
    if st != QMM_OK:
        fail(f"validate {ty.name}: finite scales (edges included) give {st}: "
             f"{lib.qmm_last_error().decode()}")
    n = 0
    for o, kind in fields:
        for bad in NONFINITE[kind]:
            b = q.copy()
            set_field(b, [1 * bpr + 2], o, kind, bad)
            st = lib.qmm_validate_rows(ty.id, b.ctypes.data, nrows, k, rb)
            msg = lib.qmm_last_error().decode()
            n += 1
            if st != QMM_ERR_NUMERIC:
                fail(f"validate {ty.name}: {kind} field at byte {o} = 0x{bad:x} gives {st}, "
                     f"expected QMM_ERR_NUMERIC")
            elif "row 1" not in msg or "block 2" not in msg:
                fail(f"validate {ty.name}: message {msg!r} does not name row 1, block 2")
    print(f"  validate   {ty.name:7s}: finite edge scales accepted; {n} non-finite scale "
          f"fields ({', '.join(sorted({kd for _, kd in fields}))}) found", flush=True)


class GgmlAsQmm:
    """--self-test: ggml's own functions in the place of libqmm, every gguf type in its
    table, so that the harness (coverage counts, gguf.quants against ggml, the quantize and
    validate paths) runs on types qmm does not have yet. It checks this test, not qmm."""

    def __init__(self, gg):
        self.gg, self.err = gg, b""
        self.tab = {gt.value: gt for gt in T if gt.name not in NOT_QMM_TYPES}

    def _name(self, t):
        return self.gg.ggml_type_name(t).decode()

    def qmm_type_is_supported(self, t):
        return t in self.tab

    def qmm_type_name(self, t):
        return self.gg.ggml_type_name(t) if t in self.tab else None

    def qmm_type_block_size(self, t):
        return gguf.GGML_QUANT_SIZES[self.tab[t]][0] if t in self.tab else 0

    def qmm_type_block_bytes(self, t):
        return gguf.GGML_QUANT_SIZES[self.tab[t]][1] if t in self.tab else 0

    def qmm_type_from_name(self, name, out):
        hit = [t for t in self.tab if self.gg.ggml_type_name(t) == name]
        out._obj.value = hit[0] if hit else -1
        return QMM_OK if hit else 1

    def qmm_type_has_quantizer(self, t):
        return self._name(t) == "f32" or ggml_quantizer(self.gg, self._name(t)) is not None

    def qmm_last_error(self):
        return self.err

    def qmm_dequantize_rows(self, t, src, dst, rows, k):
        if self._name(t) == "f32":
            ctypes.memmove(dst, src, rows * k * 4)
        else:
            ggml_dequantizer(self.gg, self._name(t))(src, dst, rows * k)
        return QMM_OK

    def qmm_quantize_rows(self, t, src, dst, rows, k):
        f = ggml_quantizer(self.gg, self._name(t))
        if self._name(t) == "f32":
            ctypes.memmove(dst, src, rows * k * 4)
        elif f is None:
            return QMM_ERR_UNSUPPORTED
        else:
            self.gg.ggml_quantize_init(t)
            f(src, dst, rows * k)
        return QMM_OK

    def qmm_validate_rows(self, t, src, rows, k, stride):
        gt = self.tab[t]
        bs, bb = gguf.GGML_QUANT_SIZES[gt]
        a = np.ctypeslib.as_array((ctypes.c_uint8 * (rows * stride)).from_address(src))
        for r in range(rows):
            q = a[r * stride: r * stride + k // bs * bb].reshape(-1, bb)
            for off, kind, cnt in SCALES[gt.name]:
                for c in range(cnt):
                    bad = np.flatnonzero(nonfinite(kind, get_field(q, off + c * KIND_BYTES[kind],
                                                                   kind)))
                    if bad.size:
                        self.err = f"row {r}, block {bad[0]}".encode()
                        return QMM_ERR_NUMERIC
        return QMM_OK


def main():
    self_test = sys.argv[1:] == ["--self-test"]
    gg = load_ggml()
    if self_test:
        if gg is None:
            sys.exit("--self-test needs ggml-py")
        print("SELF-TEST: ggml stands in for qmm (this checks the test, not qmm)")
        lib = GgmlAsQmm(gg)
    else:
        lib = load_qmm()
    types = table(lib, gg)
    print(f"cross-check of {len(types)} types of qmm's table: {', '.join(t.name for t in types)}",
          flush=True)
    for ty in types:
        # one generator per type: a type's data does not depend on which other types exist
        rng = np.random.default_rng(20240611 + ty.id)
        check_dequantize(lib, gg, ty, rng)
        check_quantize(lib, gg, ty, rng)
        check_validate(lib, ty, rng)
    if failures:
        print(f"FAIL: {len(failures)} failure(s); {len(skips)} skipped")
        sys.exit(1)
    print(f"OK: every type of qmm's table equals gguf.quants and ggml bit for bit on the above"
          f"{f' ({len(skips)} skipped, see SKIP lines)' if skips else ''}")


if __name__ == "__main__":
    main()
