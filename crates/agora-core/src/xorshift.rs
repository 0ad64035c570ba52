//! A seeded pseudo-random generator for deterministic workloads, tests,
//! benchmarks and simulations: xorshift64* (Vigna, 2016). Not for keys or
//! anything an adversary must not predict. Its sequence is part of what the
//! pinned tests and the simulator's reproducibility rely on, so it never
//! changes.

/// xorshift64*. The state is the seed as given; a zero seed yields zeros, so
/// callers pass non-zero seeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xorshift64(pub u64);

impl Xorshift64 {
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value in `0..n` (`0` when `n` is 0). Modulo bias is negligible for
    /// the small ranges it is used for.
    pub fn below_u64(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// [`Xorshift64::below_u64`] for lengths and indexes.
    pub fn below(&mut self, n: usize) -> usize {
        self.below_u64(n as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

#[cfg(test)]
mod tests {
    use super::Xorshift64;

    #[test]
    fn the_sequence_is_fixed() {
        let mut r = Xorshift64(42);
        let first: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        let mut again = Xorshift64(42);
        assert_eq!(first, (0..3).map(|_| again.next_u64()).collect::<Vec<_>>());
        assert_eq!(Xorshift64(0).below(0), 0);
        assert!((0..1000).all(|_| r.below(7) < 7));
    }
}
