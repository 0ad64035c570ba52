//! What a link does to a packet: how long it takes (a latency distribution),
//! how fast the sender's uplink drains (bandwidth), and how often it is lost.
//! Every draw comes from the caller's seeded generator; the arithmetic of the
//! distributions is in integers and IEEE doubles, which give the same bits on
//! every machine, so a seed gives the same run everywhere.

use agora_core::xorshift::Xorshift64;
use serde::{Deserialize, Serialize};

/// A latency distribution, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Latency {
    /// Always `ms`.
    Fixed {
        /// The delay.
        ms: u64,
    },
    /// Uniform in `[min_ms, max_ms]`.
    Uniform {
        /// The least delay.
        min_ms: u64,
        /// The greatest delay.
        max_ms: u64,
    },
    /// Normal with mean `mean_ms` and standard deviation `sd_ms`, cut at 0.
    Normal {
        /// The mean.
        mean_ms: f64,
        /// The standard deviation.
        sd_ms: f64,
    },
    /// Log-normal with median `median_ms` and shape `sigma` (a long tail:
    /// most packets fast, a few very slow), cut at `max_ms`.
    LogNormal {
        /// The median.
        median_ms: f64,
        /// The standard deviation of the logarithm.
        sigma: f64,
        /// The greatest delay.
        max_ms: u64,
    },
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed { ms: 0 }
    }
}

impl Latency {
    /// One delay, in ms.
    pub fn sample(&self, rng: &mut Xorshift64) -> u64 {
        match *self {
            Latency::Fixed { ms } => ms,
            Latency::Uniform { min_ms, max_ms } => min_ms + rng.below_u64(max_ms.saturating_sub(min_ms) + 1),
            Latency::Normal { mean_ms, sd_ms } => (mean_ms + sd_ms * standard_normal(rng)).max(0.0).round() as u64,
            Latency::LogNormal { median_ms, sigma, max_ms } => ((median_ms.max(0.0)) * (sigma * standard_normal(rng)).exp()).round().min(max_ms as f64) as u64,
        }
    }

    /// The check a scenario's numbers must pass.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Latency::Fixed { .. } => Ok(()),
            Latency::Uniform { min_ms, max_ms } if min_ms > max_ms => Err(format!("uniform latency: min_ms {min_ms} > max_ms {max_ms}")),
            Latency::Uniform { .. } => Ok(()),
            Latency::Normal { mean_ms, sd_ms } if !(mean_ms.is_finite() && sd_ms.is_finite() && mean_ms >= 0.0 && sd_ms >= 0.0) => {
                Err(format!("normal latency: mean_ms {mean_ms} and sd_ms {sd_ms} must be finite and ≥ 0"))
            }
            Latency::Normal { .. } => Ok(()),
            Latency::LogNormal { median_ms, sigma, .. } if !(median_ms.is_finite() && sigma.is_finite() && median_ms >= 0.0 && sigma >= 0.0) => {
                Err(format!("log-normal latency: median_ms {median_ms} and sigma {sigma} must be finite and ≥ 0"))
            }
            Latency::LogNormal { .. } => Ok(()),
        }
    }
}

impl Latency {
    /// Every number within its bound ([`LATENCY_MS_MAX`], [`SIGMA_MAX`]),
    /// the field named under `at`.
    pub fn validate_bounds(&self, at: &str) -> Result<(), String> {
        let ms = |field: &str, v: f64| {
            if v.is_finite() && (0.0..=LATENCY_MS_MAX as f64).contains(&v) {
                Ok(())
            } else {
                Err(format!("{at}.{field}: {v} is not between 0 and {LATENCY_MS_MAX}"))
            }
        };
        match *self {
            Latency::Fixed { ms } => within(&format!("{at}.ms"), ms, 0, LATENCY_MS_MAX),
            Latency::Uniform { min_ms, max_ms } => {
                within(&format!("{at}.min_ms"), min_ms, 0, LATENCY_MS_MAX)?;
                within(&format!("{at}.max_ms"), max_ms, 0, LATENCY_MS_MAX)
            }
            Latency::Normal { mean_ms, sd_ms } => {
                ms("mean_ms", mean_ms)?;
                ms("sd_ms", sd_ms)
            }
            Latency::LogNormal { median_ms, sigma, max_ms } => {
                ms("median_ms", median_ms)?;
                if !(sigma.is_finite() && (0.0..=SIGMA_MAX).contains(&sigma)) {
                    return Err(format!("{at}.sigma: {sigma} is not between 0 and {SIGMA_MAX}"));
                }
                within(&format!("{at}.max_ms"), max_ms, 0, LATENCY_MS_MAX)
            }
        }
    }
}

/// A standard normal draw (Box–Muller), from two uniform draws in (0, 1].
fn standard_normal(rng: &mut Xorshift64) -> f64 {
    let unit = |rng: &mut Xorshift64| ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let (u1, u2) = (unit(rng), unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The fastest uplink a scenario may give, bytes/s (1 TB/s).
pub const BANDWIDTH_MAX: u64 = 1_000_000_000_000;
/// A latency's milliseconds (and a normal's standard deviation): an hour.
pub const LATENCY_MS_MAX: u64 = 3_600_000;
/// A log-normal latency's shape.
pub const SIGMA_MAX: f64 = 10.0;

/// `Ok` when `min ≤ value ≤ max`; else an error naming `field`.
pub(crate) fn within(field: &str, value: u64, min: u64, max: u64) -> Result<(), String> {
    if value < min {
        return Err(format!("{field}: {value} is less than {min}"));
    }
    if value > max {
        return Err(format!("{field}: {value} is more than {max}"));
    }
    Ok(())
}

/// What a link does to packets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkModel {
    /// The delay of each packet.
    pub latency: Latency,
    /// The sender's uplink, bytes per second (`None`: unlimited). Packets
    /// a node sends wait for the ones it sent before.
    pub bandwidth_bytes_per_s: Option<u64>,
    /// Packets lost, per million.
    pub loss_ppm: u32,
}

impl LinkModel {
    /// Is this packet lost?
    pub fn loses(&self, rng: &mut Xorshift64) -> bool {
        self.loss_ppm > 0 && rng.below_u64(1_000_000) < u64::from(self.loss_ppm)
    }

    /// Every number within its bound, the field named under `at`: the
    /// latency's, a rate of 1 byte/s to 1 TB/s, losses up to a million ppm.
    pub fn validate_bounds(&self, at: &str) -> Result<(), String> {
        self.latency.validate_bounds(&format!("{at}.latency"))?;
        if let Some(rate) = self.bandwidth_bytes_per_s {
            within(&format!("{at}.bandwidth_bytes_per_s"), rate, 1, BANDWIDTH_MAX)?;
        }
        within(&format!("{at}.loss_ppm"), u64::from(self.loss_ppm), 0, 1_000_000)
    }

    /// The check a scenario's numbers must pass.
    pub fn validate(&self) -> Result<(), String> {
        self.latency.validate()?;
        if self.loss_ppm > 1_000_000 {
            return Err(format!("loss_ppm {} is more than a million", self.loss_ppm));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_stay_in_their_bounds_and_are_seeded() {
        let mut a = Xorshift64(7);
        let mut b = Xorshift64(7);
        let u = Latency::Uniform { min_ms: 10, max_ms: 20 };
        let n = Latency::Normal { mean_ms: 50.0, sd_ms: 10.0 };
        let l = Latency::LogNormal { median_ms: 30.0, sigma: 1.0, max_ms: 2_000 };
        let mut sum = 0u64;
        for _ in 0..10_000 {
            let x = u.sample(&mut a);
            assert!((10..=20).contains(&x));
            assert_eq!(x, u.sample(&mut b));
            let y = n.sample(&mut a);
            assert_eq!(y, n.sample(&mut b));
            sum += y;
            assert!(l.sample(&mut a) <= 2_000);
            l.sample(&mut b);
        }
        let mean = sum / 10_000;
        assert!((48..=52).contains(&mean), "normal mean {mean}");
    }

    #[test]
    fn loss_is_about_its_rate() {
        let mut rng = Xorshift64(3);
        let m = LinkModel { loss_ppm: 100_000, ..LinkModel::default() };
        let lost = (0..100_000).filter(|_| m.loses(&mut rng)).count();
        assert!((9_000..11_000).contains(&lost), "{lost} of 100,000 lost at 10%");
    }
}
