// f16: elements 2i, 2i+1 are the low and high halves of word i of the row.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let i = (rb >> 2u) + (e >> 1u);
    return W8(vec4<f32>(unpack2x16float(W[i]), unpack2x16float(W[i + 1u])),
              vec4<f32>(unpack2x16float(W[i + 2u]), unpack2x16float(W[i + 3u])));
}
