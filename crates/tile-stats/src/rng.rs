//! Seeded pseudo-random numbers: xoshiro256++ seeded through splitmix64.
//!
//! Self-written so that results depend only on the seed, never on a dependency's version.

/// One step of splitmix64; also a good 64-bit mixing function.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256++ generator.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// Generator whose whole state comes from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        let mut sm = seed;
        Self {
            s: [
                splitmix64(&mut sm),
                splitmix64(&mut sm),
                splitmix64(&mut sm),
                splitmix64(&mut sm),
            ],
        }
    }

    /// Independent stream number `stream` of `seed`, so work can be split into fixed blocks.
    pub(crate) fn stream(seed: u64, stream: u64) -> Self {
        let mut sm = seed;
        Self::new(splitmix64(&mut sm) ^ stream)
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `0..n` (`n > 0`), without modulo bias (Lemire's method).
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// Calls `f` with `count` uniform indices in `0..n` (`n > 0`).
    ///
    /// For `n` below 2^32 each 64-bit output gives two indices (Lemire's method on each half),
    /// which halves the generator's share of a bootstrap resample.
    #[inline]
    pub(crate) fn indices(&mut self, n: usize, count: usize, mut f: impl FnMut(usize)) {
        let Ok(n32) = u32::try_from(n) else {
            for _ in 0..count {
                f(self.below(n as u64) as usize);
            }
            return;
        };
        let n64 = u64::from(n32);
        // Maps 32 random bits to 0..n, or None in the rare biased zone (probability < n / 2^32).
        let threshold = n32.wrapping_neg() % n32;
        let pick = |bits: u32| {
            let m = u64::from(bits) * n64;
            ((m as u32) >= threshold).then_some((m >> 32) as usize)
        };
        let mut left = count;
        while left >= 2 {
            let r = self.next_u64();
            for half in [r as u32, (r >> 32) as u32] {
                match pick(half) {
                    Some(i) => f(i),
                    None => f(self.below(n64) as usize),
                }
            }
            left -= 2;
        }
        if left == 1 {
            f(self.below(n64) as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // First outputs of splitmix64 seeded with 1234567 (reference C implementation).
        let mut s = 1_234_567;
        assert_eq!(splitmix64(&mut s), 6_457_827_717_110_365_317);
        assert_eq!(splitmix64(&mut s), 3_203_168_211_198_807_973);
    }

    #[test]
    fn same_seed_same_stream_and_streams_differ() {
        let a: Vec<u64> = (0..8)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..8)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        let mut s0 = Rng::stream(7, 0);
        let mut s1 = Rng::stream(7, 1);
        assert_ne!(s0.next_u64(), s1.next_u64());
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut r = Rng::new(1);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
        assert_eq!(r.below(1), 0);
        let mut counts = [0u32; 7];
        r.indices(7, 70_001, |i| counts[i] += 1);
        assert_eq!(counts.iter().sum::<u32>(), 70_001);
        for c in counts {
            assert!((9_400..10_600).contains(&c), "{counts:?}");
        }
        assert!(r.below(u64::MAX) < u64::MAX);
    }
}
