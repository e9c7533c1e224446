// q4_K: 144-byte super-blocks of 256: f16 d, f16 dmin, 12 bytes scales (kscale.wgsl), 128
// bytes qs at 16. Element 64c + 32s + l: nibble s of qs[32c + l], sub-block 2c + s; value
// (d * sc) * q - dmin * mn (the product is exact: a contracted multiply-add rounds the same).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 144u;
    let i = e & 255u;
    let c = i >> 6u;
    let s = (i >> 5u) & 1u;
    let l = i & 31u;
    let sm = kscale_min(b + 4u, 2u * c + s);
    let d1 = w_f16(b) * f32(sm.x);
    let m1 = w_f16(b + 2u) * f32(sm.y);
    let q = b + 16u + 32u * c + l;
    return W8(vec4<f32>(fields4(w_u32(q), 4u * s, 4u)) * d1 - m1,
              vec4<f32>(fields4(w_u32(q + 4u), 4u * s, 4u)) * d1 - m1);
}
