//! `ln` and `exp` from basic IEEE-754 arithmetic only.
//!
//! The platform's libm may differ in the last bit between hosts (glibc,
//! musl, macOS); a different last bit in one sampled duration changes every
//! event after it. These use only `+ - * /` and exponent manipulation, which
//! IEEE 754 makes exact and identical everywhere, so a seed gives the same
//! run on any host.
//!
//! [`ln`] is the reference that defines every sampled duration. The
//! exponential samples take [`neg_ln_scaled_rounded`], which computes the
//! same integers from a table-driven `ln` with a proven error bound and
//! falls back to the reference only where that bound leaves the rounding
//! in doubt.

/// Natural logarithm of a positive finite `x`: the reference. Every
/// sampled duration is defined by it (a `const fn` so that the table of
/// [`neg_ln_scaled_rounded`] is built from it at compile time).
pub const fn ln(x: f64) -> f64 {
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
    // The same operations in the same order as a `for` over `INV` (a
    // `const fn` cannot iterate).
    let mut poly = 0.0;
    let mut k = 0;
    while k < INV.len() {
        poly = (poly + INV[k]) * s2;
        k += 1;
    }
    let sum = s * (1.0 + poly);
    2.0 * sum + e as f64 * LN2
}

/// Grid points per octave of the fast `ln`'s table (a power of two).
const GRID: usize = 128;

/// The fast `ln`'s table, one entry per grid point `g = 1 + i / GRID`
/// (`i` in `0..=GRID`): `(c, -ln(c), octave)` with `c` the nearest double to
/// `1 / g`, its `ln` by the reference [`ln`], and `octave` 0. Points past
/// `sqrt(2)` (`i >= 54`) stand for `g / 2` instead (`c` doubled, `octave`
/// 1): an argument just below 1 then meets a table value near 0 rather
/// than `ln 2` cancelling against `-ln 2` (see [`fast_ln`]'s bound).
static LN_TABLE: [(f64, f64, i64); GRID + 1] = {
    let mut table = [(0.0, 0.0, 0); GRID + 1];
    let mut i = 0;
    while i <= GRID {
        let g = 1.0 + i as f64 / GRID as f64; // exact
        let (c, octave) = if i >= 54 { (2.0 / g, 1) } else { (1.0 / g, 0) };
        table[i] = (c, -ln(c), octave);
        i += 1;
    }
    table
};

/// `ln x` from a table, for a positive normal `x`, within a relative
/// `2^-42` of the reference [`ln`] (the bound is derived below and
/// checked by the tests). Not a replacement for it: only
/// [`neg_ln_scaled_rounded`] uses it, to find the integers that do not
/// need the reference.
///
/// `x = 2^e m` with `m` in [1, 2); `g`, the grid point nearest `m`, has
/// `c ~ 1/g` in the table (or `2/g`, `m` then halved and `e` one more);
/// `r = m c - 1` has `|r| <= 2^-8` (half a grid step over `g`), and
/// `ln x = (e + octave) ln 2 - ln c + ln(1 + r)`, the
/// last by its series to `r^6` (truncation `<= |r|^7 / 7 < 2^-58`).
///
/// The bound, relative to `|ln x|`: `m c` is rounded once (`2^-53`
/// absolute, `- 1` is exact); the table's `ln` is the reference's
/// (`< 2^-49` relative, see below); the polynomial and the two sums add
/// a few `2^-53` of their operands. Where `e + octave = 0` (`x` in
/// [0.71, 1.42); only `u <= 1` reaches it here), `|ln x| >= 2^-9` unless `g` is the octave's top point,
/// where `c` is 1 and `r` exact; otherwise `|ln x| >= 0.35`. So the
/// absolute `2^-53` of `r` weighs at most `2^-44` relative, and the rest
/// less. The reference: `s = (m - 1) / (m + 1)` is within `2^-52`, the
/// series within `2^-51`, its sum with `e ln 2` cancels at most by 3 (its
/// `m` is within `[sqrt 1/2, sqrt 2]`, `|2 atanh s| <= 0.35 <= |e ln 2| / 2`):
/// `< 2^-49`.
#[inline]
fn fast_ln(x: f64) -> f64 {
    const LN2: f64 = std::f64::consts::LN_2;
    let bits = x.to_bits();
    let mantissa = bits & ((1 << 52) - 1);
    // The nearest grid point: the top 7 bits of the mantissa, rounded.
    let i = ((mantissa + (1 << 44)) >> 45) as usize;
    let (c, neg_ln_c, octave) = LN_TABLE[i];
    let e = (bits >> 52) as i64 - 1023 + octave;
    // m, or m / 2 for a grid point standing for g / 2.
    let m = f64::from_bits(mantissa | ((1023 - octave) as u64) << 52);
    let r = m * c - 1.0;
    // ln(1 + r) = r - r^2/2 + r^3/3 - r^4/4 + r^5/5 - r^6/6, grouped in
    // pairs so that the four multiplies do not wait on each other.
    let r2 = r * r;
    let tail = (-0.5 + r * (1.0 / 3.0)) + r2 * ((-0.25 + r * 0.2) + r2 * (-1.0 / 6.0));
    (e as f64 * LN2 + neg_ln_c) + (r + r2 * tail)
}

/// `(-ln(u) * scale).round() as u64` with [`ln`] the reference, for `u` in
/// (0, 1] and `scale >= 0`: the same integer, faster. The exponential
/// samples are these integers (`Rng::exp`).
///
/// `y = -fast_ln(u) * scale` is within a relative `2^-42` of the
/// reference's product ([`fast_ln`]'s bound, and one rounding each of the
/// products), so where `y` is more than `y * 2^-32` away from a half
/// (`k + 0.5`), the reference's product lies on the same side of it and
/// rounds to the same integer. Only within that margin (a fraction
/// `2^-31 y` of draws, about one in a million at `y` = 1,000) is the
/// reference computed; likewise for a subnormal `u` or a product too large
/// to split exactly (`y >= 2^52`).
#[inline]
pub fn neg_ln_scaled_rounded(u: f64, scale: f64) -> u64 {
    let reference = || (-ln(u) * scale).round() as u64;
    if u.to_bits() >> 52 == 0 {
        return reference();
    }
    let y = -fast_ln(u) * scale;
    if y.is_nan() || y >= (1u64 << 52) as f64 {
        return reference();
    }
    // y < 2^52: its integer part is exact, and so is its fraction.
    let whole = y as u64;
    let fraction = y - whole as f64;
    if (fraction - 0.5).abs() <= y * (1.0 / (1u64 << 32) as f64) {
        return reference();
    }
    whole + (fraction > 0.5) as u64
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

    /// Arguments that probe the fast `ln`: every grid point's rounding
    /// boundaries in many octaves, the top of the unit interval (`1 - k
    /// 2^-53`, where `Rng::exp` draws most finely), the bottom (`k 2^-53`),
    /// powers of two down to the subnormals, and uniform draws.
    fn probes(random: usize) -> Vec<f64> {
        let mut u = vec![1.0, f64::MIN_POSITIVE, 5e-324, 1e-310, 2.0f64.powi(-53)];
        // 2^-e by its bits: `powi(-e)` overflows to 1/inf = 0 past 2^-1023.
        for e in 1..=1074u64 {
            u.push(match e {
                1..=1022 => f64::from_bits((1023 - e) << 52),
                _ => f64::from_bits(1 << (1074 - e)),
            });
        }
        for k in 1..200_000u64 {
            u.push(1.0 - k as f64 * 2.0f64.powi(-53));
            u.push(k as f64 * 2.0f64.powi(-53));
        }
        for exponent in [1022u64, 1021, 1020, 1000, 990, 970, 1] {
            for j in 0..=GRID as u64 {
                for d in -4i64..=4 {
                    let mantissa = ((2 * j + 1) << 44).wrapping_add(d as u64) & ((1 << 52) - 1);
                    u.push(f64::from_bits(exponent << 52 | mantissa));
                }
            }
        }
        let mut rng = crate::Rng::seed_from_u64(3);
        u.extend((0..random).map(|_| 1.0 - rng.next_f64()));
        u
    }

    #[test]
    fn fast_ln_is_within_its_bound() {
        let mut worst: f64 = 0.0;
        for x in probes(1_000_000) {
            if x.to_bits() >> 52 == 0 {
                continue; // subnormal: never given to fast_ln
            }
            let (fast, reference) = (fast_ln(x), ln(x));
            let error = (fast - reference).abs() / reference.abs().max(f64::MIN_POSITIVE);
            assert!(
                fast == reference || error <= 2.0f64.powi(-42),
                "ln({x:e}): {fast:e} vs {reference:e}"
            );
            worst = worst.max(error);
        }
        // What the probes reach (2^-44.0, next to 1 where `r`'s rounding
        // weighs most) is inside the bound, which is 2^10 inside the
        // margin `neg_ln_scaled_rounded` keeps.
        assert!(worst < 2.0f64.powi(-43), "worst {worst:e}");
    }

    #[test]
    fn rounded_samples_are_the_reference_integers() {
        let means = [
            0u64,
            1,
            3,
            1_000,
            10_000,
            20_000,
            1_000_000,
            123_456_789,
            1 << 30,
            1 << 40,
            1 << 50,
        ];
        for u in probes(2_000_000) {
            for &mean in &means {
                let scale = mean as f64;
                assert_eq!(
                    neg_ln_scaled_rounded(u, scale),
                    (-ln(u) * scale).round() as u64,
                    "u = {u:e} ({:#x}), mean {mean}",
                    u.to_bits()
                );
            }
        }
    }

    /// Products built to fall on a half (or an integer) to within an ulp:
    /// the reference decides them, rounding a half away from zero.
    #[test]
    fn products_at_a_half_round_as_the_reference() {
        for k in 1..60 {
            let u = 2.0f64.powi(-k);
            let target = k as f64 * 7.5;
            let scale = target / -ln(u);
            assert_eq!(
                neg_ln_scaled_rounded(u, scale),
                (-ln(u) * scale).round() as u64,
                "k {k}"
            );
        }
    }
}
