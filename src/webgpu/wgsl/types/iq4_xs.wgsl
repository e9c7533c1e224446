// iq4_xs: 136-byte super-blocks of 256: f16 d, u16 scales_h at 2, scales_l[4] at 4, qs[128]
// at 8. Sub-block ib = i / 32: 6-bit scale ls = (nibble ib % 2 of scales_l[ib / 2]) | (bits
// 2ib of scales_h) << 4; value (d * (ls - 32)) * values[q], q as iq4_nl within the
// sub-block's 16 bytes qs[16 ib ..].
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 136u;
    let i = e & 255u;
    let ib = i >> 5u;
    let lo = extractBits(w_u8(b + 4u + (ib >> 1u)), 4u * (ib & 1u), 4u);
    let hi = extractBits(w_u16(b + 2u), 2u * ib, 2u);
    let dl = w_f16(b) * f32(i32(lo | (hi << 4u)) - 32);
    let j = i & 31u;
    let sh = select(0u, 4u, j >= 16u);
    let q = b + 8u + 16u * ib + (j & 15u);
    return W8(cb16x4(CB_IQ4, fields4(w_u32(q), sh, 4u)) * dl,
              cb16x4(CB_IQ4, fields4(w_u32(q + 4u), sh, 4u)) * dl);
}
