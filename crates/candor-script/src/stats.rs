//! The statistics objects `done(summary, latency, requests)` receives, over an HdrHistogram.

use hdrhistogram::Histogram;
use mlua::{MetaMethod, UserData, UserDataMethods, Value};

/// A distribution as wrk's scripts read it: `.min .max .mean .stdev`, `:percentile(p)`, `#s`
/// (how many distinct values were recorded), `s(i)` (wrk: the i-th distinct value, lowest first,
/// and how many times it was recorded) and `s[i]` (wrk2: the value at percentile 100·i/#s).
/// Any other name reads as itself (`s.total` is `"total"`), as wrk's C `__index` returns it.
pub struct Stats {
    hist: Histogram<u64>,
    /// Distinct recorded values and their counts, lowest first: what `s(i)` walks.
    distinct: Vec<(u64, u64)>,
}

impl Stats {
    /// Statistics over `hist`, each value divided by `divisor` (1000 turns nanoseconds into
    /// the microseconds wrk reports; 1 keeps the values).
    pub fn new(hist: &Histogram<u64>, divisor: u64) -> Stats {
        let divisor = divisor.max(1);
        let mut scaled = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        for v in hist.iter_recorded() {
            let value = hist.highest_equivalent(v.value_iterated_to()) / divisor;
            // record_n grows the histogram to the value (saturating_record_n would clamp it to
            // the initial range, about 2048).
            let _ = scaled.record_n(value, v.count_at_value());
        }
        let distinct = scaled
            .iter_recorded()
            .map(|v| {
                (
                    scaled.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect();
        Stats {
            hist: scaled,
            distinct,
        }
    }

    /// The value at percentile `p` (0..=100); 0 when nothing was recorded.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.hist.is_empty() {
            return 0;
        }
        if p >= 100.0 {
            return self.hist.max();
        }
        self.hist
            .highest_equivalent(self.hist.value_at_percentile(p.max(0.0)))
            .min(self.hist.max())
    }

    fn field(&self, name: &str) -> Option<f64> {
        let empty = self.hist.is_empty();
        Some(match name {
            "min" if empty => 0.0,
            "min" => self.hist.min() as f64,
            "max" => self.hist.max() as f64,
            "mean" if empty => 0.0,
            "mean" => self.hist.mean(),
            "stdev" if empty => 0.0,
            "stdev" => self.hist.stdev(),
            _ => return None,
        })
    }
}

impl UserData for Stats {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("percentile", |_, s, p: f64| Ok(s.percentile(p)));
        methods.add_meta_method(MetaMethod::Len, |_, s, ()| Ok(s.distinct.len()));
        methods.add_meta_method(MetaMethod::Call, |_, s, i: i64| {
            let (value, count) = usize::try_from(i - 1)
                .ok()
                .and_then(|i| s.distinct.get(i).copied())
                .unwrap_or((0, 0));
            Ok((value, count))
        });
        methods.add_meta_method(MetaMethod::Index, |_, s, key: Value| match key {
            Value::Integer(_) | Value::Number(_) => {
                let i = match key {
                    Value::Integer(i) => i as f64,
                    Value::Number(n) => n,
                    _ => unreachable!("matched above"),
                };
                let n = s.distinct.len().max(1) as f64;
                Ok(Value::Number(s.percentile(100.0 * i / n) as f64))
            }
            // wrk's __index pushes nothing for a name it does not know and returns the top of
            // the stack: the key itself. Scripts lean on that (`"total: " .. requests.total`
            // prints `total: total` under wrk, where nil would stop done() with an error).
            Value::String(name) => Ok(match s.field(&name.to_str()?) {
                Some(v) => Value::Number(v),
                None => Value::String(name),
            }),
            _ => Ok(Value::Nil),
        });
    }
}
