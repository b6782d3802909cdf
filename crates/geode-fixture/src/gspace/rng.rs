//! The generator's randomness, written here so a world depends on nothing but its seed: a
//! splitmix64 stream for building the world in one pass, and stateless hashing of (seed, labels)
//! so that any page can be recomputed alone, in any order, on every request.
//!
//! Not for cryptography, and not a general-purpose random library: only the few distributions
//! the generator draws from (uniform, Bernoulli, Pareto, Zipf over a table).

/// The splitmix64 finaliser: a bijection of u64 that spreads every input bit over the output.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of an ordered list of numbers: the key of one decision of the generator.
pub(crate) fn hash(parts: &[u64]) -> u64 {
    parts.iter().fold(0x6a09_e667_f3bc_c909, |acc, &part| {
        mix(acc ^ part.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    })
}

/// A hash of a string (FNV-1a, then mixed), to key decisions on a path or a title.
pub(crate) fn hash_str(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(h)
}

/// Labels that keep the streams of different decisions apart (the first part of a hash).
pub(crate) mod label {
    pub const WORLD: u64 = 1;
    pub const LAYOUT: u64 = 2;
    pub const TEXT: u64 = 3;
    pub const TITLE: u64 = 4;
    pub const LINKS: u64 = 6;
    pub const EPOCH: u64 = 7;
    pub const TRAP: u64 = 8;
    pub const NAME: u64 = 9;
    pub const DATE: u64 = 10;
}

/// A splitmix64 stream.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A stream keyed by `parts`, independent of every stream keyed otherwise.
    pub(crate) fn keyed(parts: &[u64]) -> Rng {
        Rng(hash(parts))
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n` > 0), by the multiply-high method (bias below 2^-32 for the
    /// sizes used here).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Pareto with scale 1 and shape `alpha`: at least 1, heavy-tailed.
    pub(crate) fn pareto(&mut self, alpha: f64) -> f64 {
        // 1 - unit() is in (0, 1], so the power is finite.
        (1.0 - self.unit()).powf(-1.0 / alpha)
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// Fisher-Yates.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// An index drawn from cumulative weights (`cumulative` ascending, last = total).
    pub(crate) fn weighted(&mut self, cumulative: &[f64]) -> usize {
        let total = cumulative.last().copied().unwrap_or(0.0);
        let x = self.unit() * total;
        cumulative
            .partition_point(|&c| c <= x)
            .min(cumulative.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_keyed_streams_differ() {
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::keyed(&[7]), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::keyed(&[7]), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(
            Rng::keyed(&[1, 2]).next_u64(),
            Rng::keyed(&[2, 1]).next_u64()
        );
        assert_ne!(hash_str("a/b"), hash_str("a/c"));
    }

    #[test]
    fn draws_stay_in_their_ranges_with_plausible_means() {
        let mut rng = Rng::keyed(&[1]);
        let n = 20_000;
        let mut below_sum = 0;
        let mut hits = 0;
        for _ in 0..n {
            let x = rng.below(10);
            assert!(x < 10);
            below_sum += x;
            let y = rng.range(3, 5);
            assert!((3..=5).contains(&y));
            assert!(rng.pareto(1.5) >= 1.0);
            hits += u64::from(rng.chance(0.25));
        }
        let mean = below_sum as f64 / n as f64;
        assert!((4.3..4.7).contains(&mean), "{mean}");
        let share = hits as f64 / n as f64;
        assert!((0.23..0.27).contains(&share), "{share}");
        let mut counts = [0u32; 3];
        for _ in 0..n {
            counts[rng.weighted(&[1.0, 1.0, 4.0])] += 1;
        }
        // Weights 1, 0, 3: the middle bucket is empty.
        assert_eq!(counts[1], 0, "{counts:?}");
        assert!(counts[2] > counts[0] * 2, "{counts:?}");
        let mut items: Vec<u32> = (0..50).collect();
        rng.shuffle(&mut items);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(items, sorted);
    }
}
