//! Summary math: which percentile rows a sample count supports, the % variation across runs,
//! and the JLBH-style number formatting.

/// Percentile rows for `count` samples, without the final "worst" row (which is always shown).
///
/// 50, 90 and 99 always; 99.7 above 10,000 samples; then each further nine needs 100 times more
/// samples: 99.9 from 100,000, 99.99 from 1,000,000, 99.999 from 10,000,000, and so on. That
/// leaves at least 100 samples beyond every reported percentile, so the row is a measurement and
/// not the luck of a few samples.
pub fn percentile_rows(count: u64) -> Vec<f64> {
    let mut rows = vec![50.0, 90.0, 99.0];
    if count > 10_000 {
        rows.push(99.7);
    }
    let mut nines = 3u32; // 99.9
    let mut needed: u64 = 100_000;
    while count >= needed {
        rows.push(100.0 - 100.0 / 10f64.powi(nines as i32));
        nines += 1;
        needed = match needed.checked_mul(10) {
            Some(n) => n,
            None => break,
        };
    }
    rows
}

/// How the "% Variation" column is computed from one row's values across runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Variation {
    /// JLBH's formula, for comparability with its published tables:
    /// `100 * (max - min) / (max + min / 2)`. The denominator is a quirk (not a mean); values
    /// are lower than a relative range.
    #[default]
    Jlbh,
    /// Relative range: `100 * (max - min) / ((max + min) / 2)`.
    RelativeRange,
}

impl Variation {
    /// The formula in words, as printed under the summary tables.
    pub fn describe(self) -> &'static str {
        match self {
            Variation::Jlbh => "100*(max-min)/(max+min/2), JLBH's formula",
            Variation::RelativeRange => "100*(max-min)/((max+min)/2), the relative range",
        }
    }

    /// % variation of `values` (0 for fewer than two values or an all-zero row).
    pub fn of(self, values: &[f64]) -> f64 {
        if values.len() < 2 {
            return 0.0;
        }
        let max = values.iter().cloned().fold(f64::MIN, f64::max);
        let min = values.iter().cloned().fold(f64::MAX, f64::min);
        let denominator = match self {
            Variation::Jlbh => max + min / 2.0,
            Variation::RelativeRange => (max + min) / 2.0,
        };
        if denominator <= 0.0 {
            0.0
        } else {
            100.0 * (max - min) / denominator
        }
    }
}

/// The runs the variation is computed over: like JLBH, the first run is left out as warm-up
/// residue when there are at least three runs; with one or two runs all are used.
pub fn variation_runs(runs: usize) -> std::ops::Range<usize> {
    if runs >= 3 {
        1..runs
    } else {
        0..runs
    }
}

/// Formats microseconds the way JLBH's one-line run summaries do: two decimals below 1, one
/// below 10, whole numbers below 1,000, then three significant figures with thousands commas
/// (0.11, 8.4, 385, 1,930, 45,100).
pub fn format_us_short(us: f64) -> String {
    if us < 1.0 {
        format!("{us:.2}")
    } else if us < 10.0 {
        format!("{us:.1}")
    } else if us < 1000.0 {
        format!("{}", us.round() as u64)
    } else {
        let digits = us.log10().floor() as i32 + 1;
        let scale = 10f64.powi(digits - 3);
        let rounded = ((us / scale).round() * scale) as u64;
        candor_core::units::format_count(rounded)
    }
}

/// The percentile label as JLBH prints it: "50", "99.9", "99.99".
pub fn percentile_label(p: f64) -> String {
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_format_matches_jlbh_examples() {
        assert_eq!(format_us_short(0.114), "0.11");
        assert_eq!(format_us_short(8.43), "8.4");
        assert_eq!(format_us_short(385.02), "385");
        assert_eq!(format_us_short(1933.31), "1,930");
        assert_eq!(format_us_short(4587.52), "4,590");
        assert_eq!(format_us_short(999.42), "999");
    }

    #[test]
    fn labels() {
        assert_eq!(percentile_label(50.0), "50");
        assert_eq!(percentile_label(99.7), "99.7");
        assert_eq!(percentile_label(100.0 - 100.0 / 1e4), "99.99");
    }
}
