// tq1_0: 54-byte super-blocks of 256 trits: qs[48] (5 trits per byte), qh[4] (4 per byte),
// f16 d at 52. A byte x holds trit n (0 = most significant) as ((x * 3^n) mod 256 * 3) >> 8;
// value (t - 1) * d. Unit u = i / 8: u < 20: trit u / 4 of qs[8 (u % 4) + j]; u < 30: trit
// (u - 20) / 2 of qs[32 + 8 ((u - 20) % 2) + j]; else trit 2 (u - 30) + j / 4 of qh[j % 4].
fn trits4(q: u32, pow3: u32) -> vec4<f32> {
    let t = (((fields4(q, 0u, 8u) * vec4<u32>(pow3)) & vec4<u32>(255u)) * vec4<u32>(3u)) >> vec4<u32>(8u);
    return vec4<f32>(vec4<i32>(t) - vec4<i32>(1));
}

fn pow3(n: u32) -> u32 {
    return select(select(select(select(81u, 27u, n == 3u), 9u, n == 2u), 3u, n == 1u), 1u, n == 0u);
}

fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 54u;
    let u = (e & 255u) >> 3u;
    let d = w_f16(b + 52u);
    if (u < 30u) {
        let lowq = u < 20u;
        let q = b + select(32u + 8u * ((u - 20u) & 1u), 8u * (u & 3u), lowq);
        let p = pow3(select((u - 20u) >> 1u, u >> 2u, lowq));
        return W8(trits4(w_u32(q), p) * d, trits4(w_u32(q + 4u), p) * d);
    }
    let qh = w_u32(b + 48u);
    let n = 2u * (u - 30u);
    return W8(trits4(qh, pow3(n)) * d, trits4(qh, pow3(n + 1u)) * d);
}
