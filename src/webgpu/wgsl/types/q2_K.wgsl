// q2_K: 84-byte super-blocks of 256: 16 bytes scales (low nibble scale, high nibble min per
// 16 elements), 64 bytes qs (2-bit), f16 d at 80, f16 dmin at 82. Element 128h + 32p + l:
// bits 2p of qs[32h + l], scale byte 8h + 2p + l/16; value (d * sc) * q - dmin * mn.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 84u;
    let i = e & 255u;
    let h = i >> 7u;
    let p = (i >> 5u) & 3u;
    let l = i & 31u;
    let sc = w_u8(b + 8u * h + 2u * p + (l >> 4u));
    let dl = w_f16(b + 80u) * f32(sc & 15u);
    let ml = w_f16(b + 82u) * f32(sc >> 4u);
    let q = b + 16u + 32u * h + l;
    return W8(vec4<f32>(fields4(w_u32(q), 2u * p, 2u)) * dl - ml,
              vec4<f32>(fields4(w_u32(q + 4u), 2u * p, 2u)) * dl - ml);
}
