//! Predicted ("true") latency distributions of test cases whose answer is known in advance:
//! a server that stalls every request during known windows (periodic stall, SIGSTOP pause).
//!
//! A request intended at `t` inside a stall `[start, end)` completes when the stall ends, so its
//! response time is `end - t` plus the normal service time; outside a stall it is the service
//! time. With intended times spread uniformly over the measured window (constant or Poisson
//! arrivals), the distribution follows from the windows alone (see docs/truth.md).

/// One statistic of a latency distribution, as a truth table compares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Statistic {
    /// The percentile `p`, 0 < p < 100.
    Percentile(f64),
    Max,
    Mean,
}

impl Statistic {
    /// The same statistic of a measured distribution, nanoseconds.
    pub fn of(self, measured: &candor_core::Summary) -> f64 {
        match self {
            Statistic::Percentile(p) => measured.at(p).unwrap_or(0) as f64,
            Statistic::Max => measured.max_ns as f64,
            Statistic::Mean => measured.mean_ns,
        }
    }
}

/// The rows of every truth table (`candor calibrate`, `candor run --expect`, `candor demo`).
pub const TRUTH_ROWS: [(&str, Statistic); 8] = [
    ("p50", Statistic::Percentile(50.0)),
    ("p75", Statistic::Percentile(75.0)),
    ("p90", Statistic::Percentile(90.0)),
    ("p99", Statistic::Percentile(99.0)),
    ("p99.9", Statistic::Percentile(99.9)),
    ("p99.99", Statistic::Percentile(99.99)),
    ("max", Statistic::Max),
    ("mean", Statistic::Mean),
];

/// Stall windows overlapping a measured window of intended send times.
#[derive(Debug, Clone)]
pub struct StallTruth {
    /// Absolute `[start, end)` stall windows, nanoseconds.
    pub stalls: Vec<(u64, u64)>,
    /// The measured window of intended send times.
    pub from_ns: u64,
    pub to_ns: u64,
    /// The normal service time added to every request.
    pub base_ns: u64,
}

impl StallTruth {
    /// Periodic stalls as the built-in server makes them: with period `every` and length `for_`,
    /// stalls are `[origin + k*every + (every - for_), origin + (k+1)*every)`.
    pub fn periodic(
        origin_ns: u64,
        every_ns: u64,
        for_ns: u64,
        from_ns: u64,
        to_ns: u64,
        base_ns: u64,
    ) -> Self {
        let mut stalls = Vec::new();
        if every_ns > 0 && for_ns > 0 && to_ns > from_ns {
            let first_k = from_ns.saturating_sub(origin_ns) / every_ns;
            let mut k = first_k.saturating_sub(1);
            loop {
                let start = origin_ns + k * every_ns + (every_ns - for_ns);
                let end = origin_ns + (k + 1) * every_ns;
                if start >= to_ns {
                    break;
                }
                if end > from_ns {
                    stalls.push((start, end));
                }
                k += 1;
            }
        }
        StallTruth {
            stalls,
            from_ns,
            to_ns,
            base_ns,
        }
    }

    fn span(&self) -> f64 {
        (self.to_ns - self.from_ns) as f64
    }

    /// Fraction of intended times that fall in a stall.
    pub fn stalled_fraction(&self) -> f64 {
        self.excess_tail(0.0)
    }

    /// P(stall wait > y): the share of intended times whose wait for the stall end exceeds `y` ns.
    fn excess_tail(&self, y: f64) -> f64 {
        let (a, b) = (self.from_ns as f64, self.to_ns as f64);
        let mut measure = 0.0;
        for &(ws, we) in &self.stalls {
            let (ws, we) = (ws as f64, we as f64);
            // t in [max(ws, a), min(we, b)) with we - t > y  <=>  t < we - y
            let lo = ws.max(a);
            let hi = (we - y).min(we.min(b));
            if hi > lo {
                measure += hi - lo;
            }
        }
        measure / self.span()
    }

    /// Predicted response time at percentile `p` (0..=100).
    pub fn percentile(&self, p: f64) -> u64 {
        let tail = 1.0 - p / 100.0;
        let longest = self
            .stalls
            .iter()
            .map(|&(s, e)| (e - s) as f64)
            .fold(0.0, f64::max);
        if tail >= self.excess_tail(0.0) || longest == 0.0 {
            return self.base_ns;
        }
        // The tail is decreasing in y: bisect for the smallest y with tail(y) <= target.
        let (mut lo, mut hi) = (0.0, longest);
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if self.excess_tail(mid) > tail {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.base_ns + hi.round() as u64
    }

    /// Predicted mean response time.
    pub fn mean(&self) -> f64 {
        let (a, b) = (self.from_ns as f64, self.to_ns as f64);
        let mut integral = 0.0;
        for &(ws, we) in &self.stalls {
            let (ws, we) = (ws as f64, we as f64);
            let (lo, hi) = (ws.max(a), we.min(b));
            if hi > lo {
                // integral of (we - t) dt over [lo, hi)
                integral += ((we - lo).powi(2) - (we - hi).powi(2)) / 2.0;
            }
        }
        self.base_ns as f64 + integral / self.span()
    }

    /// The predicted value of one statistic, nanoseconds.
    pub fn predicted(&self, statistic: Statistic) -> f64 {
        match statistic {
            Statistic::Percentile(p) => self.percentile(p) as f64,
            Statistic::Max => self.max() as f64,
            Statistic::Mean => self.mean(),
        }
    }

    /// Predicted maximum: the longest wait of any intended time in the window.
    pub fn max(&self) -> u64 {
        let longest = self
            .stalls
            .iter()
            .filter_map(|&(ws, we)| {
                let lo = ws.max(self.from_ns);
                (we.min(self.to_ns) > lo).then_some(we - lo)
            })
            .max()
            .unwrap_or(0);
        self.base_ns + longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn wrk2_example_percentiles() {
        // P = 10 s, S = 2 s over whole periods: f = 0.2, p90 = 1 s, p99 = 1.9 s, p99.9 = 1.99 s.
        let t = StallTruth::periodic(0, 10 * S, 2 * S, 0, 100 * S, 0);
        assert!((t.stalled_fraction() - 0.2).abs() < 1e-9);
        assert_eq!(t.percentile(50.0), 0);
        assert_eq!(t.percentile(80.0), 0);
        let close = |got: u64, want: f64| ((got as f64 - want) / want).abs() < 1e-6;
        assert!(close(t.percentile(90.0), 1.0e9), "{}", t.percentile(90.0));
        assert!(close(t.percentile(99.0), 1.9e9));
        assert!(close(t.percentile(99.9), 1.99e9));
        assert_eq!(t.max(), 2 * S);
        assert!((t.mean() - 0.2e9).abs() < 1.0, "{}", t.mean());
    }

    #[test]
    fn partial_windows_are_clipped() {
        // Window 9 s..17 s covers only the last second of the [8 s, 10 s) stall: f = 1/8.
        let t = StallTruth::periodic(0, 10 * S, 2 * S, 9 * S, 17 * S, 50_000);
        assert!((t.stalled_fraction() - 0.125).abs() < 1e-9);
        assert_eq!(t.max(), S + 50_000);
        assert_eq!(t.percentile(85.0), 50_000);
    }

    #[test]
    fn gil_tene_thought_experiment() {
        // 100 s normal then 100 s frozen: p75 = 50 s, p90 = 80 s, p99 = 98 s, mean ~ 25 s.
        let t = StallTruth::periodic(0, 200 * S, 100 * S, 0, 2000 * S, 1_000_000);
        let secs = |p: f64| t.percentile(p) as f64 / 1e9;
        assert!((secs(75.0) - 50.0).abs() < 0.01);
        assert!((secs(90.0) - 80.0).abs() < 0.01);
        assert!((secs(99.0) - 98.0).abs() < 0.01);
        assert!((t.mean() / 1e9 - 25.0).abs() < 0.01);
        assert_eq!(
            t.predicted(Statistic::Percentile(75.0)),
            t.percentile(75.0) as f64
        );
        assert_eq!(t.predicted(Statistic::Max), t.max() as f64);
        assert_eq!(t.predicted(Statistic::Mean), t.mean());
    }
}
