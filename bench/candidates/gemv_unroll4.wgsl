// gemv_unroll4.wgsl — a candidate for `qmm bench --candidate ... --kernel gemv`: gemv.wgsl with the
// usual-case loop unrolled by four (the four pieces' W and X loaded before any is added:
// more loads in flight per lane), the same sums in the same order.
//
// gemv.wgsl — decode sizes: each workgroup owns GV_ROWS rows of W and GV_TOKENS tokens.
//
// GV_LANES threads per row walk the row in 8-element pieces (lane l takes pieces l,
// l + GV_LANES, ...), decode each once (qmm_dec8) and multiply it with the GV_TOKENS tokens'
// X values into one vec4 accumulator (component j: token j); then the lanes' partial sums are
// added in workgroup memory by halving (no subgroup operations). The order of every sum is
// fixed and the same for every n: batch-invariant; f32 throughout (F32 class). X through the
// row shifts (common.wgsl), Y through y_store.

var<workgroup> red: array<vec4<f32>, GV_ROWS * GV_LANES>;

// The shift of token t's X row (0 beyond the dispatch's tokens).
fn x_shift(t: u32) -> i32 {
    if (t >= P.n) {
        return 0;
    }
    return S[t];
}

// Token t's X elements e .. e+7 times w (their shift s: 0 in xdot, nonzero in xdot_scaled).
fn xdot(t: u32, e: u32, w: W8) -> f32 {
    if (t >= P.n) {
        return 0.0;
    }
    let i = P.x_off + t * P.ldx + e;
    var xl = bitcast<vec4<f32>>(vec4<u32>(X[i], X[i + 1u], X[i + 2u], X[i + 3u]));
    var xh = bitcast<vec4<f32>>(vec4<u32>(X[i + 4u], X[i + 5u], X[i + 6u], X[i + 7u]));
    return xfinish(e, w, xl, xh);
}

fn xdot_scaled(t: u32, e: u32, w: W8, s: i32) -> f32 {
    if (t >= P.n) {
        return 0.0;
    }
    let i = P.x_off + t * P.ldx + e;
    var xl = vec4<f32>(x_at(i, s), x_at(i + 1u, s), x_at(i + 2u, s), x_at(i + 3u, s));
    var xh = vec4<f32>(x_at(i + 4u, s), x_at(i + 5u, s), x_at(i + 6u, s), x_at(i + 7u, s));
    return xfinish(e, w, xl, xh);
}

fn xfinish(e: u32, w: W8, xl_in: vec4<f32>, xh_in: vec4<f32>) -> f32 {
    var xl = xl_in;
    var xh = xh_in;
    if (e + 8u > P.k) { // a float type's k tail: the X words past the row are not the row's
        let j = vec4<u32>(e, e + 1u, e + 2u, e + 3u);
        xl = select(vec4<f32>(0.0), xl, j < vec4<u32>(P.k));
        xh = select(vec4<f32>(0.0), xh, j + vec4<u32>(4u) < vec4<u32>(P.k));
    }
    return dot(w.lo, xl) + dot(w.hi, xh);
}

@compute @workgroup_size(GV_LANES, GV_ROWS, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let lane = lid.x;
    let r = wid.x * GV_ROWS + lid.y;
    let t0 = wid.y * GV_TOKENS;
    var acc = vec4<f32>(0.0);
    let s0 = x_shift(t0);
    let s1 = x_shift(t0 + 1u);
    let s2 = x_shift(t0 + 2u);
    let s3 = x_shift(t0 + 3u);
    if (r < P.rows) {
        if ((s0 | s1 | s2 | s3) == 0) { // the workgroup's tokens: no tiny X row (the usual case)
            const ST: u32 = GV_LANES * 8u;
            var e = lane * 8u;
            for (; e + 3u * ST < P.k; e += 4u * ST) {
                let w0 = load_w8(r, e);
                let w1 = load_w8(r, e + ST);
                let w2 = load_w8(r, e + 2u * ST);
                let w3 = load_w8(r, e + 3u * ST);
                let d0 = vec4<f32>(xdot(t0, e, w0), xdot(t0 + 1u, e, w0), xdot(t0 + 2u, e, w0), xdot(t0 + 3u, e, w0));
                let e1 = e + ST;
                let d1 = vec4<f32>(xdot(t0, e1, w1), xdot(t0 + 1u, e1, w1), xdot(t0 + 2u, e1, w1), xdot(t0 + 3u, e1, w1));
                let e2 = e + 2u * ST;
                let d2 = vec4<f32>(xdot(t0, e2, w2), xdot(t0 + 1u, e2, w2), xdot(t0 + 2u, e2, w2), xdot(t0 + 3u, e2, w2));
                let e3 = e + 3u * ST;
                let d3 = vec4<f32>(xdot(t0, e3, w3), xdot(t0 + 1u, e3, w3), xdot(t0 + 2u, e3, w3), xdot(t0 + 3u, e3, w3));
                acc += d0;
                acc += d1;
                acc += d2;
                acc += d3;
            }
            for (; e < P.k; e += ST) {
                let w = load_w8(r, e);
                acc += vec4<f32>(xdot(t0, e, w), xdot(t0 + 1u, e, w), xdot(t0 + 2u, e, w), xdot(t0 + 3u, e, w));
            }
        } else {
            for (var e = lane * 8u; e < P.k; e += GV_LANES * 8u) {
                let w = load_w8(r, e);
                acc += vec4<f32>(xdot_scaled(t0, e, w, s0), xdot_scaled(t0 + 1u, e, w, s1),
                                 xdot_scaled(t0 + 2u, e, w, s2), xdot_scaled(t0 + 3u, e, w, s3));
            }
        }
    }
    let slot = lid.y * GV_LANES + lane;
    red[slot] = acc;
    workgroupBarrier();
    for (var s = GV_LANES / 2u; s > 0u; s = s / 2u) {
        if (lane < s) {
            red[slot] = red[slot] + red[slot + s];
        }
        workgroupBarrier();
    }
    if (lane == 0u && r < P.rows) {
        let sum = red[slot];
        let y = P.y_off + r;
        if (t0 < P.n) { y_store(y + t0 * P.ldy, t0, r, sum.x); }
        if (t0 + 1u < P.n) { y_store(y + (t0 + 1u) * P.ldy, t0 + 1u, r, sum.y); }
        if (t0 + 2u < P.n) { y_store(y + (t0 + 2u) * P.ldy, t0 + 2u, r, sum.z); }
        if (t0 + 3u < P.n) { y_store(y + (t0 + 3u) * P.ldy, t0 + 3u, r, sum.w); }
    }
}
