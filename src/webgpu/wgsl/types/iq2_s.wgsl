// iq2_s: 82-byte super-blocks of 256: f16 d, qs[64] at 2 (32 grid indices, then 32 sign
// bytes), qh[8] at 66, scales[8] at 74. Unit u (ib = u / 4, l = u % 4): grid index qs[u] |
// ((qh[ib] << (8 - 2l)) & 0x300) (1024 entries), signs qs[32 + u], ls as iq2_xs.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 82u;
    let u = (e & 255u) >> 3u;
    let ib = u >> 2u;
    let l = u & 3u;
    let qh = w_u8(b + 66u + ib);
    let sc = w_u8(b + 74u + ib);
    let ls = select(sc & 15u, sc >> 4u, (u & 2u) != 0u);
    let idx = w_u8(b + 2u + u) | ((qh << (8u - 2u * l)) & 0x300u);
    return iq2_group(G_IQ2S + 2u * idx, w_u8(b + 34u + u), iq2_db(w_f16(b), ls));
}
