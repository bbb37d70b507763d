//! Side-by-side comparison of runs by percentile, with each run's change against the first and a
//! `% Variation` column for repeated runs of one configuration.
//!
//! `% Variation` = 100 × (max − min) / ((max + min) / 2) over all runs: the spread relative to the
//! mid-range. JLBH prints `100 × (max − min) / (max + min / 2)` (an operator-precedence quirk, not
//! a mean) and skips its first run as warm-up residue; candor runs have their own warm-up, so
//! every run counts, and the denominator is the real mid-range.
//!
//! Below the table, [`compare_confidence`] gives each run's ratio to the first with a 95%
//! confidence interval, a verdict and the rule that decided it: across runs when both inputs hold
//! repeats ([`candor_analysis::compare_ci::compare_repeats`]), else from one run's interval read
//! against the noise floor ([`candor_analysis::repeats`]).

mod confidence;
mod measure;
mod table;

pub use confidence::*;
pub use measure::{CompareError, ComparisonMeasure};
pub use table::*;
