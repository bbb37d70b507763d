//! Proves that filling templated requests, choosing weighted requests and checking response
//! bodies allocate nothing per request: everything is compiled and every buffer sized before the
//! measured stretch, on a thread marked for the counting allocator.

use candor_load::workload::check::{BodyMatch, BodyNeedle};
use candor_load::workload::data::{DataOrder, DataTable};
use candor_load::workload::pick::Picker;
use candor_load::workload::template::{data_row, request_rng, Fill, FillBuffers, RequestTemplate};

#[global_allocator]
static ALLOCATOR: candor_testkit::CountingAllocator = candor_testkit::CountingAllocator;

/// The marked-allocation count is one for the whole process (every marked thread): the tests
/// take turns, or one test's set-up on its marked thread lands in another's window.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn filling_picking_and_checking_allocate_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(|| {
        let data = DataTable::parse(
            // Row 3's email cannot go into a header: its requests are refused, allocating nothing.
            b"user,email\nalice,a@x\n\"bob, jr\",b@averylongdomain.example\n\"c/d?\",\"c\r\nX: 1\"\n",
            "u.csv",
        )
        .unwrap();
        let templates = vec![
            RequestTemplate::compile(
                "POST",
                "127.0.0.1:80",
                "/users/{{data:user}}?n={{seq}}&r={{random:-1000:1000000}}",
                &["X-Id: {{uuid}}".into(), "X-Mail: {{data:email}}".into()],
                b"{\"user\":\"{{data:user}}\",\"n\":{{seq}}}",
                Some(&data),
                "line 1",
            )
            .unwrap(),
            RequestTemplate::compile(
                "GET",
                "127.0.0.1:80",
                "/plain",
                &[],
                b"",
                Some(&data),
                "line 2",
            )
            .unwrap(),
        ];
        let picker = Picker::weighted(&[3.0, 1.0]).unwrap();
        let mut buffers = FillBuffers::for_templates(&templates);
        let needle = BodyNeedle::new(b"\"ok\":true").unwrap();
        let mut matcher = BodyMatch::default();
        candor_testkit::mark_this_thread();
        let before = candor_testkit::marked_allocations();
        let mut bytes = 0usize;
        let (mut found, mut refused) = (0, 0);
        // Values up to u64::MAX digits: the largest seqs must fit the buffers sized before the run.
        for seq in (0..20_000u64).chain(u64::MAX - 10..u64::MAX) {
            let mut rng = request_rng(9, seq);
            let which = picker.pick(seq, &mut rng);
            let row = data_row(DataOrder::Random, data.rows(), seq, &mut rng);
            let mut fill = Fill {
                seq,
                row,
                rng: &mut rng,
                data: Some(&data),
            };
            match templates[which].fill(&mut fill, &mut buffers) {
                Ok(request) => bytes += request.len(),
                Err(_) => refused += 1,
            }
            matcher.reset();
            matcher.feed(&needle, b"{\"o");
            matcher.feed(&needle, b"k\":true}");
            found += usize::from(matcher.found());
        }
        let allocations = candor_testkit::marked_allocations() - before;
        assert!(bytes > 10_000 * 30 && found == 20_010);
        assert!(refused > 1000 && refused < 10_000, "{refused}");
        assert_eq!(allocations, 0, "{allocations} allocations while filling");
    })
    .join()
    .unwrap();
}

/// Stepping a replayed schedule (the reader thread encodes ahead) and copying each taken
/// request into a slot buffer allocates nothing on the load thread.
#[test]
fn a_replayed_schedule_allocates_nothing_on_the_load_thread() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use candor_load::workload::replay::ReplayPlan;
    use candor_load::workload::runtime::RequestMaker;
    let dir = std::env::temp_dir().join(format!("candor-replay-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.log");
    let mut text = String::new();
    for i in 0..20_000u64 {
        text.push_str(&format!(
            "10.0.0.1 - - [10/Oct/2000:13:55:{:02} -0700] \"GET /item/{i} HTTP/1.1\" 200 5\n",
            i / 1000
        ));
    }
    std::fs::write(&path, text).unwrap();
    let plan = ReplayPlan::scan(&path, 1.0, false).unwrap();
    let stream = plan.stream("127.0.0.1:80", 0, 1).unwrap();
    let capacity = plan.max_request_bytes + "127.0.0.1:80".len();
    let config = candor_load::RunPlan::new(
        candor_load::Target::parse("http://127.0.0.1:80/").unwrap(),
        Default::default(),
    )
    .unwrap();
    let compiled = std::sync::Arc::new(
        candor_load::request_plan::compile_requests(&config, &|_| {
            candor_load::seam::unit::BodyForm::Template
        })
        .unwrap(),
    );
    std::thread::spawn(move || {
        let mut schedule = candor_load::schedule::Schedule::replayed(0, stream, capacity);
        let mut maker = RequestMaker::new(compiled, None, DataOrder::Sequential, 1, 4, capacity);
        candor_testkit::mark_this_thread();
        let before = candor_testkit::marked_allocations();
        let mut n = 0u64;
        while schedule.peek() != u64::MAX {
            let seq = schedule.seq();
            schedule.advance();
            let (bytes, _) = schedule.taken_request().unwrap();
            maker.copy((seq % 4) as usize, bytes, false);
            n += 1;
        }
        let allocations = candor_testkit::marked_allocations() - before;
        assert_eq!(n, 20_000);
        assert_eq!(allocations, 0, "{allocations} allocations while replaying");
    })
    .join()
    .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keeping the first failed responses allocates nothing: the parser copies failing bodies into
/// its fixed excerpt and the samples replace their latest kept entry in place, for every one of
/// thousands of failures that arrive earliest-last (each one is kept: the worst case).
#[test]
fn excerpting_and_keeping_failed_responses_allocate_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use candor_load::engine::examples::FailureSamples;
    use candor_load::protocol::http1::{Progress, ResponseParser};
    use candor_load::workload::check::ResponseChecks;
    use candor_load::StatusSet;
    use std::sync::Arc;
    let accept: Arc<[StatusSet]> = vec![StatusSet::parse("2xx").unwrap()].into();
    let checks: Arc<[ResponseChecks]> = vec![ResponseChecks {
        body: Some(BodyNeedle::new(b"\"ok\":true").unwrap()),
        headers: Vec::new(),
    }]
    .into();
    std::thread::spawn(move || {
        let mut parser = ResponseParser::new(false);
        parser.keep_excerpts(accept);
        parser.set_checks(checks);
        parser.select_checks(0);
        let mut samples = FailureSamples::default();
        let mut body = b"HTTP/1.1 503 Busy\r\nContent-Length: 300\r\n\r\n".to_vec();
        body.extend(std::iter::repeat_n(b'x', 300));
        let (head, rest) = body.split_at(60);
        candor_testkit::mark_this_thread();
        let before = candor_testkit::marked_allocations();
        let mut failed = 0u64;
        for seq in 0..20_000u64 {
            // The body arrives in two reads.
            let Ok(Progress::NeedMore { consumed }) = parser.feed(head, false) else {
                panic!("the head and part of the body")
            };
            assert_eq!(consumed, head.len());
            let Ok(Progress::Done { status, .. }) = parser.feed(rest, false) else {
                panic!("the rest of the body")
            };
            let check = candor_core::workload_results::FailedCheck::Status;
            samples.record(seq, u64::MAX - seq, 0, status, check, parser.excerpt());
            failed += u64::from(status == 503);
        }
        let allocations = candor_testkit::marked_allocations() - before;
        assert_eq!(failed, 20_000);
        assert_eq!(
            allocations, 0,
            "{allocations} allocations while keeping failures"
        );
        // The earliest by intended time are the last five.
        let kept = samples.sorted();
        assert_eq!(kept.first().map(|k| k.seq), Some(19_999));
        assert_eq!(
            kept[0].body().map(<[u8]>::len),
            Some(candor_load::engine::examples::EXCERPT_KEPT)
        );
    })
    .join()
    .unwrap();
}
