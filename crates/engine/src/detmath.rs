//! `ln` and `exp` from basic IEEE-754 arithmetic only.
//!
//! The platform's libm may differ in the last bit between hosts (glibc,
//! musl, macOS); a different last bit in one sampled duration changes every
//! event after it. These use only `+ - * /` and exponent manipulation, which
//! IEEE 754 makes exact and identical everywhere, so a seed gives the same
//! run on any host.

/// Natural logarithm of a positive finite `x`.
pub fn ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    const LN2: f64 = std::f64::consts::LN_2;
    const SQRT2: f64 = std::f64::consts::SQRT_2;
    // x = m * 2^e with m in [1, 2), by the bits (subnormals scaled first).
    let (mut bits, mut e) = (x.to_bits(), 0i64);
    if bits >> 52 == 0 {
        bits = (x * (1u64 << 54) as f64).to_bits();
        e -= 54;
    }
    e += ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    if m > SQRT2 {
        m /= 2.0;
        e += 1;
    }
    // ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716: the series
    // s + s^3/3 + ... to s^25 (next term < 1e-20), in Horner form.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    const INV: [f64; 12] = [
        1.0 / 25.0,
        1.0 / 23.0,
        1.0 / 21.0,
        1.0 / 19.0,
        1.0 / 17.0,
        1.0 / 15.0,
        1.0 / 13.0,
        1.0 / 11.0,
        1.0 / 9.0,
        1.0 / 7.0,
        1.0 / 5.0,
        1.0 / 3.0,
    ];
    let mut poly = 0.0;
    for c in INV {
        poly = (poly + c) * s2;
    }
    let sum = s * (1.0 + poly);
    2.0 * sum + e as f64 * LN2
}

/// `e^x` for finite `x` (saturating to 0 or infinity far out).
pub fn exp(x: f64) -> f64 {
    const LN2: f64 = std::f64::consts::LN_2;
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -745.0 {
        return 0.0;
    }
    // x = k ln2 + r, |r| <= ln2 / 2; e^r by its Taylor series.
    let k = (x / LN2 + if x < 0.0 { -0.5 } else { 0.5 }) as i64;
    // Cody-Waite: ln 2 in two parts so k * ln2 loses nothing.
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let r = (x - k as f64 * LN2_HI) - k as f64 * LN2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..24 {
        term *= r / i as f64;
        sum += term;
    }
    // Scale by 2^k in two steps to stay in range.
    let half = k / 2;
    sum * f64::from_bits(((1023 + half) as u64) << 52)
        * f64::from_bits(((1023 + k - half) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_libm() {
        for &x in &[
            1e-300, 1e-10, 0.001, 0.5, 0.73, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300,
        ] {
            let (a, b) = (ln(x), x.ln());
            assert!(
                (a - b).abs() <= 1e-15 * b.abs().max(1.0),
                "ln({x}) = {a} vs {b}"
            );
        }
        for &x in &[
            -700.0, -20.0, -1.0, -1e-9, 0.0, 1e-9, 0.3, 1.0, 5.0, 50.0, 700.0,
        ] {
            let (a, b) = (exp(x), x.exp());
            assert!((a - b).abs() <= 4e-15 * b, "exp({x}) = {a} vs {b}");
        }
    }
}
