//! A token bucket on virtual time, for per-peer rate limits. Integer
//! arithmetic only, so the simulator reproduces it exactly.

/// Tokens refill at `per_s` per second up to `burst`; each message takes one.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    per_s: u64,
    burst: u64,
    /// Tokens held, in thousandths, so sub-token refills are not lost.
    milli_tokens: u64,
    last_ms: u64,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(per_s: u32, burst: u32, now_ms: u64) -> Self {
        let burst = u64::from(burst.max(1));
        Self { per_s: u64::from(per_s), burst, milli_tokens: burst * 1000, last_ms: now_ms }
    }

    /// Take one token at `now_ms`; `false` if the bucket is empty.
    pub fn take(&mut self, now_ms: u64) -> bool {
        let elapsed = now_ms.saturating_sub(self.last_ms);
        self.last_ms = self.last_ms.max(now_ms);
        // per_s tokens per 1000 ms = per_s milli-tokens per ms.
        self.milli_tokens = self.milli_tokens.saturating_add(elapsed.saturating_mul(self.per_s)).min(self.burst * 1000);
        if self.milli_tokens >= 1000 {
            self.milli_tokens -= 1000;
            true
        } else {
            false
        }
    }

    /// Milliseconds from `now_ms` until the bucket holds `tokens` (at most
    /// its burst); `None` if it never will (no refill).
    pub fn wait_ms(&self, now_ms: u64, tokens: u32) -> Option<u64> {
        let elapsed = now_ms.saturating_sub(self.last_ms);
        let held = self.milli_tokens.saturating_add(elapsed.saturating_mul(self.per_s)).min(self.burst * 1000);
        let short = (u64::from(tokens).min(self.burst) * 1000).saturating_sub(held);
        match short {
            0 => Some(0),
            _ if self.per_s == 0 => None,
            _ => Some(short.div_ceil(self.per_s)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TokenBucket;

    #[test]
    fn refills_at_the_rate_and_caps_at_the_burst() {
        let mut b = TokenBucket::new(10, 3, 0);
        assert!(b.take(0) && b.take(0) && b.take(0));
        assert!(!b.take(0), "burst of 3 used up");
        assert!(!b.take(50), "half a token after 50 ms at 10/s");
        assert!(b.take(100));
        assert!(!b.take(100));
        // A long pause refills to the burst, not beyond.
        assert!(b.take(10_000) && b.take(10_000) && b.take(10_000));
        assert!(!b.take(10_000));
        // Time going backwards never adds tokens.
        assert!(!b.take(5_000));
    }

    #[test]
    fn says_when_it_holds_tokens_again() {
        let mut b = TokenBucket::new(10, 3, 0);
        assert_eq!(b.wait_ms(0, 1), Some(0));
        assert!(b.take(0) && b.take(0) && b.take(0));
        assert_eq!(b.wait_ms(0, 1), Some(100), "one token at 10/s");
        assert_eq!(b.wait_ms(40, 2), Some(160));
        assert_eq!(b.wait_ms(0, 9), Some(300), "never more than the burst");
        assert!(!b.take(99) && b.take(100));
        assert_eq!(TokenBucket::new(0, 1, 0).wait_ms(0, 2), Some(0), "a full bucket of one");
        let mut dry = TokenBucket::new(0, 1, 0);
        assert!(dry.take(0));
        assert_eq!(dry.wait_ms(1_000, 1), None, "no refill: never");
    }
}
