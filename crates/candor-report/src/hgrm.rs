//! Percentile distribution files (`.hgrm`), printed exactly as Java's
//! `AbstractHistogram.outputPercentileDistribution` prints them, so HdrHistogram's plotter and
//! hdr-plot read them; and a parser for both this layout and wrk2's older "inf" variant.

use crate::javafmt::fixed_w;
use candor_core::Histo;

/// Java's default: five percentile ticks per half distance to 100%.
pub const DEFAULT_TICKS_PER_HALF: u32 = 5;
/// Nanosecond values printed as milliseconds, the unit `.hgrm` files conventionally use.
pub const MS_RATIO: f64 = 1e6;

/// One row of a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HgrmRow {
    pub value: f64,
    /// 0..=1
    pub percentile: f64,
    pub total_count: u64,
}

/// Prints `h` as Java's `outputPercentileDistribution(out, ticks_per_half, unit_ratio)` does:
/// values divided by `unit_ratio` (1e6 for ns -> ms), with the `#[Mean`, `#[Max` and `#[Buckets`
/// footer lines.
pub fn write_hgrm(h: &Histo, ticks_per_half: u32, unit_ratio: f64) -> String {
    let digits = h.sigfig() as usize;
    let mut out = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for (value, level, total) in percentile_steps(h, ticks_per_half) {
        let v = fixed_w(value as f64 / unit_ratio, 12, digits);
        let p = fixed_w(level / 100.0, 2, 12);
        if level != 100.0 {
            let inv = fixed_w(1.0 / (1.0 - level / 100.0), 14, 2);
            out.push_str(&format!("{v} {p} {total:>10} {inv}\n"));
        } else {
            out.push_str(&format!("{v} {p} {total:>10}\n"));
        }
    }
    let (mean, stdev) = java_mean_stdev(h);
    let max = if h.is_empty() { 0.0 } else { h.max() as f64 };
    out.push_str(&format!(
        "#[Mean    = {}, StdDeviation   = {}]\n",
        fixed_w(mean / unit_ratio, 12, digits),
        fixed_w(stdev / unit_ratio, 12, digits)
    ));
    out.push_str(&format!(
        "#[Max     = {}, Total count    = {:>12}]\n",
        fixed_w(max / unit_ratio, 12, digits),
        h.len()
    ));
    out.push_str(&format!(
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]\n",
        h.buckets(),
        sub_bucket_count(h.sigfig())
    ));
    out
}

fn sub_bucket_count(sig: u8) -> u64 {
    let largest = 2 * 10u64.pow(sig as u32);
    let mag = 64 - (largest - 1).leading_zeros();
    1u64 << mag.max(1)
}

/// The (value, percentile level, total count) steps of Java's `PercentileIterator`: levels advance
/// in `ticks_per_half` equal steps per half distance to 100%, each reported at the first recorded
/// value whose cumulative percentile reaches it, plus a final step at 100%.
pub fn percentile_steps(h: &Histo, ticks_per_half: u32) -> Vec<(u64, f64, u64)> {
    let mut out = Vec::new();
    let n = h.len();
    if n == 0 {
        return out;
    }
    let buckets: Vec<(u64, u64)> = h
        .iter_recorded()
        .map(|v| {
            (
                h.highest_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
        .collect();
    let mut level = 0.0f64;
    let mut total = 0u64;
    let last = buckets.len().saturating_sub(1);
    for (i, &(value, count)) in buckets.iter().enumerate() {
        total = total.saturating_add(count);
        loop {
            let current = 100.0 * total as f64 / n as f64;
            if current < level {
                break;
            }
            out.push((value, level, total));
            let next = next_level(level, ticks_per_half);
            if next <= level || !next.is_finite() {
                // Only with counts beyond 2^53 do steps fall below float resolution (Java would
                // loop forever there); end with the 100% row instead.
                let (v, _) = *buckets.last().unwrap_or(&(value, 0));
                out.push((v, 100.0, n));
                return out;
            }
            level = next;
            // Java's iterator stops at the first report once every count is in; only the extra
            // 100% step follows.
            if total >= n {
                break;
            }
        }
        if i == last || total >= n {
            out.push((value, 100.0, total));
            break;
        }
    }
    out
}

fn next_level(level: f64, ticks_per_half: u32) -> f64 {
    let halvings = ((100.0 / (100.0 - level)).ln() / 2f64.ln()) as i64;
    let ticks =
        (ticks_per_half as i64).wrapping_mul(2f64.powf(halvings.saturating_add(1) as f64) as i64);
    level + 100.0 / ticks as f64
}

/// Java's `getMean`/`getStdDeviation`: each bucket counted at its median-equivalent value.
fn java_mean_stdev(h: &Histo) -> (f64, f64) {
    if h.is_empty() {
        return (0.0, 0.0);
    }
    let n = h.len() as f64;
    let mut total = 0.0;
    for v in h.iter_recorded() {
        total += h.median_equivalent(v.value_iterated_to()) as f64 * v.count_at_value() as f64;
    }
    let mean = total / n;
    let mut dev = 0.0;
    for v in h.iter_recorded() {
        let d = h.median_equivalent(v.value_iterated_to()) as f64 - mean;
        dev += d * d * v.count_at_value() as f64;
    }
    (mean, (dev / n).sqrt())
}

/// Footer facts of a parsed file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HgrmFile {
    pub rows: Vec<HgrmRow>,
    pub mean: Option<f64>,
    pub stdev: Option<f64>,
    pub max: Option<f64>,
    pub total_count: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct HgrmError {
    pub line: usize,
    pub message: String,
}

/// Parses a percentile distribution: Java's layout or wrk2's (6-decimal percentiles, `inf`).
pub fn parse_hgrm(text: &str) -> Result<HgrmFile, HgrmError> {
    let mut f = HgrmFile::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let err = |m: &str| HgrmError {
            line: i + 1,
            message: m.to_string(),
        };
        if line.is_empty() || line.starts_with("Value") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("#[") {
            let rest = rest.trim_end_matches(']');
            for part in rest.split(',') {
                let Some((k, v)) = part.split_once('=') else {
                    continue;
                };
                let v = v.trim();
                match k.trim() {
                    "Mean" => f.mean = v.parse().ok(),
                    "StdDeviation" => f.stdev = v.parse().ok(),
                    "Max" => f.max = v.parse().ok(),
                    "Total count" => f.total_count = v.parse().ok(),
                    _ => {}
                }
            }
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() < 3 {
            return Err(err("expected Value, Percentile, TotalCount columns"));
        }
        let value: f64 = cols[0].parse().map_err(|_| err("invalid value"))?;
        let percentile: f64 = cols[1].parse().map_err(|_| err("invalid percentile"))?;
        let total_count: u64 = cols[2].parse().map_err(|_| err("invalid total count"))?;
        f.rows.push(HgrmRow {
            value,
            percentile,
            total_count,
        });
    }
    if f.rows.is_empty() {
        return Err(HgrmError {
            line: 1,
            message: "no percentile rows".into(),
        });
    }
    Ok(f)
}

/// A percentile distribution in milliseconds with Java's default ticks, as an export (`--hgrm`):
/// of a histogram, or of a run's response time.
pub struct HgrmExporter;

impl crate::export::Exporter<Histo> for HgrmExporter {
    fn export(&self, h: &Histo) -> Result<Vec<u8>, crate::export::ExportError> {
        Ok(write_hgrm(h, DEFAULT_TICKS_PER_HALF, MS_RATIO).into_bytes())
    }
}

impl crate::export::Exporter<candor_core::results::RunResults> for HgrmExporter {
    fn export(
        &self,
        results: &candor_core::results::RunResults,
    ) -> Result<Vec<u8>, crate::export::ExportError> {
        let rec =
            results.main.histograms.decode().map_err(|e| {
                crate::export::ExportError::Format(format!("decoding histograms: {e}"))
            })?;
        self.export(&rec.response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::new_histogram;

    #[test]
    fn single_value_has_first_and_last_rows_only() {
        let mut h = new_histogram();
        h.record(1_000_000).unwrap();
        let text = write_hgrm(&h, 5, MS_RATIO);
        let rows: Vec<&str> = text
            .lines()
            .skip(2)
            .filter(|l| !l.starts_with('#'))
            .collect();
        assert_eq!(
            rows,
            vec![
                "       1.000 0.000000000000          1           1.00",
                "       1.000 1.000000000000          1"
            ]
        );
        assert!(
            text.contains("#[Max     =        1.000, Total count    =            1]"),
            "{text}"
        );
    }
}
