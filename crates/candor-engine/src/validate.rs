//! A run's configuration checked once, before anything starts: every setting against the others,
//! the target's protocol against the flags that apply to it, the requests against what may reach
//! the wire, and the workload (templates, data, scripts) compiled once to prove it can be.

use crate::config::{has_placeholder, LoadConfig, LoadConfigError, MAX_RATE_PER_THREAD};
use crate::seam::unit::{BodyForm, ProtocolUnit, RequestForm};
use crate::shape::LoadShape;

impl LoadConfig {
    /// Checks the settings against each other and against what the run speaks (`protocol`);
    /// run this before starting anything.
    pub fn validate(&self, protocol: &dyn ProtocolUnit) -> Result<(), LoadConfigError> {
        self.check_threads_rate_and_shape()?;
        self.check_protocol(protocol)?;
        self.check_request_set()?;
        self.check_durations_and_streams()?;
        self.check_method_and_request(protocol)?;
        crate::request_plan::validate(self, protocol)
            .map_err(|e| LoadConfigError::Invalid(e.to_string()))?;
        Ok(())
    }

    /// Threads, connections, the rate per thread, the stages or count, and the shard.
    fn check_threads_rate_and_shape(&self) -> Result<(), LoadConfigError> {
        let bad = |m: String| Err(LoadConfigError::Invalid(m));
        if self.threads == 0 {
            return bad("threads must be at least 1".into());
        }
        if self.connections < self.threads {
            return bad(format!(
                "connections ({}) must be at least the number of threads ({}): every thread needs a connection",
                self.connections, self.threads
            ));
        }
        if let Some(r) = self.shape.rate_per_s() {
            if !(r > 0.0 && r.is_finite()) {
                return bad(format!("rate must be positive, got {r}"));
            }
            let per_thread = self.thread_rate_per_s(r);
            if per_thread > MAX_RATE_PER_THREAD {
                return bad(format!(
                    "rate {} is {} per load thread, beyond what any machine can pace \
                     (at most {}/s per thread: one send per 10ns); lower -R or spread it over more threads or shards",
                    candor_core::units::format_rate(r),
                    candor_core::units::format_rate(per_thread),
                    candor_core::units::format_count(MAX_RATE_PER_THREAD as u64),
                ));
            }
        }
        match &self.shape {
            LoadShape::Stages { profile: p, .. } => {
                if self.duration_ns != p.duration_ns() {
                    return bad(format!(
                        "the run lasts {} (the sum of the -R stages) but the duration says {}",
                        candor_core::units::format_ns(p.duration_ns() as f64),
                        candor_core::units::format_ns(self.duration_ns as f64)
                    ));
                }
                let peak = p.peak_per_s();
                let per_thread = self.thread_rate_per_s(peak);
                if per_thread > MAX_RATE_PER_THREAD {
                    return bad(format!(
                        "the profile peaks at {}, {} per load thread, beyond what any machine can pace; \
                         lower it or spread it over more threads or shards",
                        candor_core::units::format_rate(peak),
                        candor_core::units::format_rate(per_thread),
                    ));
                }
            }
            LoadShape::Count { count, .. } => {
                if *count == 0 {
                    return bad("-n (number of requests) must be at least 1".into());
                }
                if self.warmup_ns > 0 {
                    return bad("-n counts every request of the schedule; it does not combine with --warmup (use -d)".into());
                }
            }
            LoadShape::ClosedLoop | LoadShape::Rate { .. } | LoadShape::Replay { .. } => {}
        }
        if self.shard_count == 0 || self.shard_index >= self.shard_count {
            return bad(format!(
                "invalid shard {}/{}: expected I/N with 0 <= I < N",
                self.shard_index, self.shard_count
            ));
        }
        Ok(())
    }

    /// What the run speaks, checked by its protocol against the rest of the settings.
    fn check_protocol(&self, protocol: &dyn ProtocolUnit) -> Result<(), LoadConfigError> {
        protocol.check(self)
    }

    /// Every request of the request set, as it may reach the wire.
    fn check_request_set(&self) -> Result<(), LoadConfigError> {
        for (i, r) in self.requests.iter().enumerate() {
            candor_wire::wire::check_request(
                &r.method,
                &r.path,
                &r.headers,
                &r.body,
                has_placeholder(&r.body),
            )
            .map_err(|e| {
                LoadConfigError::Invalid(format!("request {} of the request set: {e}", i + 1))
            })?;
        }
        Ok(())
    }

    /// Durations, timeouts, the interval and the stream settings.
    fn check_durations_and_streams(&self) -> Result<(), LoadConfigError> {
        let bad = |m: String| Err(LoadConfigError::Invalid(m));
        if self.duration_ns == 0 {
            return bad("duration must be positive".into());
        }
        // Instants are start + warm-up + duration + drain in u64 nanoseconds: a sum beyond the
        // longest single duration could wrap, and a run that long cannot finish anyway.
        let span = [self.warmup_ns, self.duration_ns, self.drain_ns]
            .iter()
            .try_fold(0u64, |sum, &d| sum.checked_add(d));
        if !matches!(span, Some(s) if s <= candor_core::units::MAX_DURATION_NS) {
            return bad(
                "--warmup, -d and --drain together last longer than the longest duration accepted \
                 (about 292 years): the run could never finish"
                    .into(),
            );
        }
        if self.timeout_ns == 0 {
            return bad("timeout must be positive".into());
        }
        if self.event_timeout_ns != 0 && self.stream.kind.is_none() && !self.stream.llm {
            return bad(
                "--event-timeout bounds the wait between a stream's events: it needs --stream or --llm"
                    .into(),
            );
        }
        if self.goodput.is_some() && !self.stream.llm {
            return bad(
                "--goodput judges each request's TTFT, TPOT and latency: it needs --llm".into(),
            );
        }
        if self.interval_ns < 1_000_000 {
            return bad("interval must be at least 1ms".into());
        }
        Ok(())
    }

    /// The method, -H, and the one request of the URL and --body.
    fn check_method_and_request(&self, protocol: &dyn ProtocolUnit) -> Result<(), LoadConfigError> {
        let bad = |m: String| Err(LoadConfigError::Invalid(m));
        if self.method.is_empty() || !self.method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return bad(format!(
                "invalid HTTP method '{}'",
                self.method.escape_debug()
            ));
        }
        // -H, the URL's path (encoded by the URL parser) and --body, before the workload's
        // templates are compiled from them.
        for h in &self.headers {
            candor_wire::wire::check_header(h)?;
        }
        if protocol.request_form() == RequestForm::Http {
            candor_wire::wire::check_request(
                &self.method,
                &self.target.path,
                &self.headers,
                &self.body,
                protocol.body_form(0) != BodyForm::Bytes && has_placeholder(&self.body),
            )?;
        }
        Ok(())
    }
}
