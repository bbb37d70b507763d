//! Goodput from `--slo` when `--goodput` is not given: an LLM run whose objectives name TTFT,
//! TPOT or the response time counts, per request, the requests within each of those measures'
//! bounds (vLLM's goodput takes one bound per measure; a percentile objective's limit is the
//! bound every request that counts as good must stay within).

use candor_analysis::slo::{Measure, Metric, Objective};
use candor_load::stream::goodput::{Bound, GoodputSlo};

/// The per-request bounds the latency objectives on `ttft`, `tpot` and the response time set;
/// `None` when no objective names one of them. Of several objectives on one measure (`p50` and
/// `p99`) the loosest limit is the bound: a request beyond the tighter one may still be among
/// the share that objective allows, but one beyond every limit meets none.
pub fn goodput_of_slo(objectives: &[Objective]) -> Option<GoodputSlo> {
    let mut slo = GoodputSlo::default();
    for o in objectives {
        if !matches!(o.metric, Metric::Percentile(_) | Metric::Max | Metric::Mean) {
            continue;
        }
        let bound = match o.measure {
            Measure::Ttft => &mut slo.ttft,
            Measure::Tpot => &mut slo.tpot,
            Measure::ResponseTime => &mut slo.e2el,
            _ => continue,
        };
        let this = Bound {
            ns: o.limit.max(0.0) as u64,
            inclusive: o.inclusive,
        };
        let looser = match *bound {
            Some(b) => (this.ns, this.inclusive) > (b.ns, b.inclusive),
            None => true,
        };
        if looser {
            *bound = Some(this);
        }
    }
    (slo.ttft.is_some() || slo.tpot.is_some() || slo.e2el.is_some()).then_some(slo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_analysis::slo::SloSet;

    fn of(text: &str) -> Option<String> {
        goodput_of_slo(&SloSet::parse(text).unwrap().objectives).map(|g| g.to_string())
    }

    #[test]
    fn ttft_and_tpot_percentiles_become_per_request_bounds() {
        assert_eq!(
            of("ttft.p99<500ms,tpot.p99<50ms").as_deref(),
            Some("ttft<500ms,tpot<50ms")
        );
    }

    #[test]
    fn the_loosest_limit_of_a_measure_is_its_bound_and_the_response_time_is_e2el() {
        assert_eq!(
            of("ttft.p50<100ms,ttft.p99<=400ms,p99<2s,errors<1%").as_deref(),
            Some("ttft<=400ms,e2el<2s")
        );
    }

    #[test]
    fn objectives_on_other_measures_give_no_goodput() {
        assert_eq!(of("errors<1%,send_lag.p99<1ms,itl.p99<20ms"), None);
    }
}
