// iq2_xxs: 66-byte super-blocks of 256: f16 d, qs[64]. Sub-block ib = u / 4 (unit u = i / 8,
// l = u % 4): grid index byte l of qs[8 ib ..], a1 = u32 at qs[8 ib + 4]; signs
// ksigns[(a1 >> 7l) & 127], scale (d * (0.5 + (a1 >> 28))) * 0.25.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 66u;
    let u = (e & 255u) >> 3u;
    let q = b + 2u + 8u * (u >> 2u);
    let l = u & 3u;
    let a1 = w_u32(q + 4u);
    return iq2_group(G_IQ2XXS + 2u * w_u8(q + l), ksign(extractBits(a1, 7u * l, 7u)),
                     iq2_db(w_f16(b), a1 >> 28u));
}
