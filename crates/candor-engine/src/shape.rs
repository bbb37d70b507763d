//! The load a run offers: one typed shape from which open or closed loop, the intended rate, a
//! shard's share and each load thread's schedule are derived, each in one place.

use crate::schedule::{ArrivalKind, Schedule};
use candor_workload::profile::{Profile, StageTable};
use candor_workload::replay::{ReplayError, ReplayPlan};
use std::sync::Arc;

/// What load is offered and when: the `-R`, `-n` and `--replay` flags as one value.
///
/// Each variant holds exactly what its schedule needs, so that no setting has to fill another
/// (a profile or a trace used to set a rate beside it too).
#[derive(Debug, Clone)]
pub enum LoadShape {
    /// `-R max`: the most the target answers with every slot in flight (connections ×
    /// `--pipeline`, or × `--streams` with HTTP/2): each slot sends its next request as soon as its
    /// previous response arrives. No schedule; each send is its own intended time.
    ClosedLoop,
    /// `-R RATE`: one total rate for the whole window, its intended times spaced by `arrival`.
    Rate { per_s: f64, arrival: ArrivalKind },
    /// `-R RATE -n N`: exactly `count` intended sends on the constant schedule of `per_s` (the
    /// window lasts N / rate; a Poisson schedule has no fixed end for N requests).
    Count { per_s: f64, count: u64 },
    /// `-R` stages: the intended rate follows the profile over the measured window; the warm-up
    /// holds the first stage's rate.
    Stages {
        profile: Profile,
        arrival: ArrivalKind,
    },
    /// `--replay`: the trace's records are the schedule and the requests. `per_s` is the mean
    /// rate of the records within the window (what the results call the target).
    Replay { plan: ReplayPlan, per_s: f64 },
}

/// A combination of `-R`, `-n` and `--arrival` that no shape has.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ShapeError {
    #[error("-n needs a rate (-R): the N requests are sent on the open-loop schedule")]
    CountWithoutRate,
    #[error(
        "-n needs --arrival constant: a Poisson schedule has no fixed end for N requests; use -d"
    )]
    CountWithPoisson,
}

impl LoadShape {
    /// The shape of one rate (`None`: `-R max`, a closed loop) spaced by `arrival`, or with `-n`
    /// exactly `count` requests on its constant schedule.
    pub fn of_rate(
        rate: Option<f64>,
        arrival: ArrivalKind,
        count: Option<u64>,
    ) -> Result<LoadShape, ShapeError> {
        Ok(match (rate, count) {
            (None, Some(_)) => return Err(ShapeError::CountWithoutRate),
            (None, None) => LoadShape::ClosedLoop,
            (Some(per_s), None) => LoadShape::Rate { per_s, arrival },
            (Some(per_s), Some(count)) => {
                if arrival != ArrivalKind::Constant {
                    return Err(ShapeError::CountWithPoisson);
                }
                LoadShape::Count { per_s, count }
            }
        })
    }

    /// `per_s` requests a second, evenly spaced.
    pub fn constant(per_s: f64) -> LoadShape {
        LoadShape::Rate {
            per_s,
            arrival: ArrivalKind::Constant,
        }
    }

    /// One rate of `per_s` with this shape's arrival (the steps of a sweep or a capacity search).
    pub fn with_rate(&self, per_s: f64) -> LoadShape {
        LoadShape::Rate {
            per_s,
            arrival: self.arrival(),
        }
    }

    /// The shape of a trace replayed for `window_ns` (at most the trace's length), with its mean
    /// rate; one more streamed pass over the trace when the window cuts it short.
    pub fn replay(plan: ReplayPlan, window_ns: u64) -> Result<LoadShape, ReplayError> {
        let records = if window_ns < plan.duration_ns() {
            plan.records_within(window_ns)?
        } else {
            plan.records
        };
        let per_s = records.max(1) as f64 / (window_ns as f64 / 1e9);
        Ok(LoadShape::Replay { plan, per_s })
    }

    /// Whether sends follow a schedule (a rate, stages or a trace) rather than each response.
    pub fn is_open_loop(&self) -> bool {
        !matches!(self, LoadShape::ClosedLoop)
    }

    /// The total intended requests per second over the measured window (a profile's or a
    /// trace's mean); `None` in a closed loop.
    pub fn rate_per_s(&self) -> Option<f64> {
        match self {
            LoadShape::ClosedLoop => None,
            LoadShape::Rate { per_s, .. }
            | LoadShape::Count { per_s, .. }
            | LoadShape::Replay { per_s, .. } => Some(*per_s),
            LoadShape::Stages { profile, .. } => Some(profile.mean_per_s()),
        }
    }

    /// The highest total rate the schedule ever asks for (what a thread must be able to pace).
    pub fn peak_per_s(&self) -> Option<f64> {
        match self {
            LoadShape::Stages { profile, .. } => Some(profile.peak_per_s()),
            other => other.rate_per_s(),
        }
    }

    /// How intended times are spaced (a trace's are its own, recorded as constant).
    pub fn arrival(&self) -> ArrivalKind {
        match self {
            LoadShape::Rate { arrival, .. } | LoadShape::Stages { arrival, .. } => *arrival,
            _ => ArrivalKind::Constant,
        }
    }

    /// `-n`: the exact number of intended sends, when the shape fixes it.
    pub fn count(&self) -> Option<u64> {
        match self {
            LoadShape::Count { count, .. } => Some(*count),
            _ => None,
        }
    }

    /// The load profile, when the shape is one.
    pub fn profile(&self) -> Option<&Profile> {
        match self {
            LoadShape::Stages { profile, .. } => Some(profile),
            _ => None,
        }
    }

    /// The replayed trace, when the shape is one.
    pub fn replay_plan(&self) -> Option<&ReplayPlan> {
        match self {
            LoadShape::Replay { plan, .. } => Some(plan),
            _ => None,
        }
    }

    /// The schedule of stream `lane` of `stride` (shards × threads), starting at `start_ns` (the
    /// warm-up's start, `warmup_ns` before the measured window): a trace's records split by index
    /// modulo `stride` (requests for `host`), the profile with the warm-up held at its first
    /// stage's rate, or the one rate, ended after `-n` requests; `None` for a closed loop. Fails
    /// only if a trace's reader thread cannot start.
    pub fn schedule(
        &self,
        start_ns: u64,
        warmup_ns: u64,
        host: &str,
        lane: u64,
        stride: u64,
    ) -> std::io::Result<Option<Schedule>> {
        Ok(Some(match self {
            LoadShape::ClosedLoop => return Ok(None),
            LoadShape::Replay { plan, .. } => {
                let stream = plan.stream(host, lane, stride)?;
                let capacity = plan.max_request_bytes + host.len();
                Schedule::replayed(start_ns, stream, capacity)
            }
            LoadShape::Stages { profile, arrival } => {
                let table = Arc::new(StageTable::new(&profile.with_warmup(warmup_ns)));
                Schedule::staged(start_ns, table, *arrival, lane, stride)
            }
            LoadShape::Rate { per_s, arrival } => {
                Schedule::new(start_ns, *per_s, *arrival, lane, stride)
            }
            LoadShape::Count { per_s, count } => {
                Schedule::new(start_ns, *per_s, ArrivalKind::Constant, lane, stride)
                    .with_limit(*count)
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_or_closed_and_the_rate_follow_from_the_shape_alone() {
        let closed = LoadShape::ClosedLoop;
        assert!(!closed.is_open_loop());
        assert_eq!(closed.rate_per_s(), None);
        let poisson = ArrivalKind::Poisson { seed: 3 };
        let rate = LoadShape::Rate {
            per_s: 250.0,
            arrival: poisson,
        };
        assert!(rate.is_open_loop());
        assert_eq!((rate.rate_per_s(), rate.arrival()), (Some(250.0), poisson));
        let profile = Profile::parse("100:1s,100..300:1s").unwrap();
        let stages = LoadShape::Stages {
            profile,
            arrival: ArrivalKind::Constant,
        };
        // (100 + 200) over 2 s; the peak is the ramp's end.
        assert_eq!(stages.rate_per_s(), Some(150.0));
        assert_eq!(stages.peak_per_s(), Some(300.0));
        assert!(stages.profile().is_some() && stages.count().is_none());
        let count = LoadShape::Count {
            per_s: 10.0,
            count: 7,
        };
        assert_eq!(
            (count.count(), count.arrival()),
            (Some(7), ArrivalKind::Constant)
        );
    }

    #[test]
    fn rate_count_and_arrival_make_a_shape_or_a_reason() {
        let poisson = ArrivalKind::Poisson { seed: 1 };
        assert!(matches!(
            LoadShape::of_rate(None, poisson, None),
            Ok(LoadShape::ClosedLoop)
        ));
        assert!(matches!(
            LoadShape::of_rate(Some(5.0), ArrivalKind::Constant, Some(9)),
            Ok(LoadShape::Count { per_s, count: 9 }) if per_s == 5.0
        ));
        assert_eq!(
            LoadShape::of_rate(None, ArrivalKind::Constant, Some(9)).unwrap_err(),
            ShapeError::CountWithoutRate
        );
        assert_eq!(
            LoadShape::of_rate(Some(5.0), poisson, Some(9)).unwrap_err(),
            ShapeError::CountWithPoisson
        );
    }

    #[test]
    fn the_schedule_of_a_count_ends_after_exactly_n_entries_over_every_lane() {
        let shape = LoadShape::Count {
            per_s: 1000.0,
            count: 10,
        };
        let mut total = 0;
        for lane in 0..3 {
            let mut s = shape.schedule(0, 0, "h", lane, 3).unwrap().unwrap();
            while s.peek() != u64::MAX {
                total += 1;
                s.advance();
            }
        }
        assert_eq!(total, 10);
        assert!(LoadShape::ClosedLoop
            .schedule(0, 0, "h", 0, 1)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_profile_schedule_holds_the_first_stage_through_the_warm_up() {
        let shape = LoadShape::Stages {
            profile: Profile::parse("1000:1s").unwrap(),
            arrival: ArrivalKind::Constant,
        };
        // One second of warm-up at 1000/s, then the stage: 2000 entries in all.
        let mut s = shape
            .schedule(0, 1_000_000_000, "h", 0, 1)
            .unwrap()
            .unwrap();
        let mut n = 0;
        while s.peek() != u64::MAX {
            n += 1;
            s.advance();
        }
        assert_eq!(n, 2000);
    }
}
