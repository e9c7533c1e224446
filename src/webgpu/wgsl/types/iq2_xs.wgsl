// iq2_xs: 74-byte super-blocks of 256: f16 d, u16 qs[32] at 2, scales[8] at 66. Unit u: q =
// qs[u]: grid index q & 511 (512-entry grid), signs ksigns[q >> 9]; ls = nibble (u / 2) % 2
// of scales[u / 4].
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 74u;
    let u = (e & 255u) >> 3u;
    let q = w_u16(b + 2u + 2u * u);
    let sc = w_u8(b + 66u + (u >> 2u));
    let ls = select(sc & 15u, sc >> 4u, (u & 2u) != 0u);
    return iq2_group(G_IQ2XS + 2u * (q & 511u), ksign(q >> 9u), iq2_db(w_f16(b), ls));
}
