//! `goodput>=N%`: the share of intended requests that met every per-request bound, parsed as a
//! lower limit and judged exactly on a run's goodput (and by the capacity search).

use super::*;
use crate::test_support::run_of;
use candor_core::results::{Goodput, StreamResults};

/// 100 intended: `completed` of them completed (the rest failed), `good` of those met the
/// bounds (`good_service` from the actual send), at an achieved 100/s of a 100/s target.
fn run(completed: u64, good: u64, good_service: u64) -> RunResults {
    let mut r = run_of(
        &vec![1_000_000; completed as usize],
        Some(100.0),
        "open-loop",
    );
    let c = &mut r.main.requests;
    c.intended = 100;
    c.failed = 100 - completed;
    c.errors.status = c.failed;
    r.main.rate.achieved_per_s = 100.0;
    r.main.stream = Some(StreamResults {
        responses: completed,
        events: completed * 10,
        events_per_response: 10.0,
        failures: Default::default(),
        llm: None,
        goodput: Some(Goodput::of(
            "ttft<500ms".into(),
            good,
            good_service,
            100,
            1.0,
        )),
    });
    r
}

#[test]
fn goodput_parses_as_a_lower_limit_in_percent() {
    let s = SloSet::parse("goodput>=90%,goodput>12.5%").unwrap();
    let o = &s.objectives;
    assert_eq!((o[0].metric, o[0].inclusive), (Metric::Goodput, true));
    assert_eq!(o[0].limit, 0.9);
    assert_eq!((o[1].metric, o[1].inclusive), (Metric::Goodput, false));
    assert_eq!(o[1].limit, 0.125);
    assert_eq!(o[0].limit_text(), "90%");
    assert!(s.limits_errors() && s.judges_goodput());
    assert!(!SloSet::parse("ttft.p99<1s").unwrap().judges_goodput());
    let why = |t: &str| Objective::parse(t).unwrap_err().why;
    assert_eq!(
        why("goodput<90%"),
        "the rate and goodput take a lower limit: rate>=95%, goodput>=90%"
    );
    assert_eq!(
        why("goodput>=0.9"),
        "the goodput limit is a percentage, like goodput>=90% (of the intended requests)"
    );
    assert_eq!(
        why("goodput>=120%"),
        "the goodput limit must be between 0% and 100%"
    );
    assert_eq!(
        why("ttft.goodput<90%"),
        "errors, rate and goodput are counts, not latencies: write them without a measure"
    );
    assert_eq!(
        why("ttft.p99>=1s"),
        "only upper limits are supported (and lower ones for the rate and goodput: \
         rate>=95%, goodput>=90%): use '<' or '<='"
    );
}

#[test]
fn goodput_is_judged_on_the_share_of_intended_requests_from_the_intended_send() {
    // 90 of 100 good from the intended send, 97 from the actual send: the first is judged.
    let r = run(95, 90, 97);
    let v = SloSet::parse("goodput>=90%,goodput>90%,goodput>=91%")
        .unwrap()
        .evaluate(&r);
    assert_eq!(
        v.iter().map(|v| v.pass).collect::<Vec<_>>(),
        [true, false, false]
    );
    assert_eq!(v[0].measured, Some(0.9));
    assert_eq!(v[0].note, "90 of 100 intended met ttft<500ms");
    assert_eq!(
        render(&v[..1]),
        "SLO goodput>=90%     goodput = 90.00% of intended     PASS  (90 of 100 intended met ttft<500ms)\n"
    );
    // A run without goodput (no bounds were given) cannot be judged: it fails.
    let mut none = r.clone();
    none.main.stream = None;
    let v = SloSet::parse("goodput>=1%").unwrap().evaluate(&none);
    assert_eq!((v[0].pass, v[0].measured), (false, None));
    assert!(
        v[0].note.starts_with("no goodput was judged"),
        "{}",
        v[0].note
    );
}

#[test]
fn capacity_judges_a_step_by_its_goodput_share_with_failures_inside_it() {
    let judge = |r: &RunResults, slo: &str| {
        crate::capacity_search::judge(r, &SloSet::parse(slo).unwrap(), 100.0)
    };
    // 5 failed, 90 good of 100: a 90% share passes (the failures are among the 10 not good)...
    let r = run(95, 90, 90);
    let t = judge(&r, "goodput>=90%");
    assert!(t.pass, "{}", t.note);
    assert!(!t.note.contains("failed"), "{}", t.note);
    // ...a 95% share does not, and says why.
    let t = judge(&r, "goodput>=95%");
    assert!(!t.pass);
    assert!(t.note.ends_with("(goodput>=95% missed)"), "{}", t.note);
    // Without a goodput objective the same step fails on its failures, as before.
    let t = judge(&r, "p99<1s");
    assert!(!t.pass);
    assert!(t.note.ends_with("(5 failed, 0 unfinished)"), "{}", t.note);
    // A step that fell behind its rate fails whatever its share.
    let mut slow = run(100, 100, 100);
    slow.main.rate.achieved_per_s = 50.0;
    let t = judge(&slow, "goodput>=90%");
    assert!(!t.pass && t.note.contains("throughput only"), "{}", t.note);
}
