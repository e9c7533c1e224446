// q3_K: 110-byte super-blocks of 256: hmask[32] at 0, qs[64] at 32 (2-bit), 12 bytes of 6-bit
// scales at 96, f16 d at 108. Element 128h + 32p + l: low bits 2p of qs[32h + l], minus 4
// unless bit 4h + p of hmask[l] is set; scale j = 8h + 2p + l/16 (low nibble of scales[j]
// for j < 8, high nibble of scales[j - 8] above, top bits 2(j/4) of scales[8 + j%4]) minus
// 32; value (d * sc) * q.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 110u;
    let i = e & 255u;
    let h = i >> 7u;
    let p = (i >> 5u) & 3u;
    let l = i & 31u;
    let j = 8u * h + 2u * p + (l >> 4u);
    let lo = select(w_u8(b + 96u + j - 8u) >> 4u, w_u8(b + 96u + j) & 15u, j < 8u);
    let hi = extractBits(w_u8(b + 104u + (j & 3u)), 2u * (j >> 2u), 2u);
    let dl = w_f16(b + 108u) * f32(i32(lo | (hi << 4u)) - 32);
    let q = b + 32u + 32u * h + l;
    let m = b + l;
    let sub0 = select(vec4<i32>(4), vec4<i32>(0), fields4(w_u32(m), 4u * h + p, 1u) == vec4<u32>(1u));
    let sub1 = select(vec4<i32>(4), vec4<i32>(0), fields4(w_u32(m + 4u), 4u * h + p, 1u) == vec4<u32>(1u));
    return W8(vec4<f32>(vec4<i32>(fields4(w_u32(q), 2u * p, 2u)) - sub0) * dl,
              vec4<f32>(vec4<i32>(fields4(w_u32(q + 4u), 2u * p, 2u)) - sub1) * dl);
}
