//! A load thread that panics where the driver cannot contain it (here, first thing on the
//! thread, through the start hook tests have): the run still returns, ended for every thread
//! with the reason `failure`, the failure named in its warnings, and the books of the threads
//! that did not fail balanced. (A panic inside a thread's loop keeps that thread's books too:
//! `engine/driver/framed_sim.rs`.)

use candor_core::results::StopReason;
use candor_load::load_run::RunOptions;
use candor_load::Target;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const MS: u64 = 1_000_000;

#[test]
fn a_panicking_load_thread_ends_the_run_with_the_others_results_and_its_failure_named() {
    // Connections are accepted by the kernel's backlog: the run never gets to send.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut c = candor_load::RunPlan::new(
        Target::parse(&format!("http://{addr}/")).unwrap(),
        Default::default(),
    )
    .unwrap();
    c.threads = 2;
    c.connections = 2;
    c.shape = candor_load::LoadShape::constant(100.0);
    c.duration_ns = 10_000 * MS;
    c.drain_ns = 1_000 * MS;
    c.validate().unwrap();
    let first = Arc::new(AtomicBool::new(true));
    let options = RunOptions {
        worker_start_hook: Some(Arc::new(move || {
            if first.swap(false, Ordering::SeqCst) {
                panic!("a bug on this thread");
            }
        })),
        ..RunOptions::default()
    };
    let started = std::time::Instant::now();
    let out = candor_load::run(&c, options, &mut |_| {}).expect("results, not an error");
    // Ended at the failure, not after the planned 10 s (+ 1 s drain): 5 s is generous for a
    // busy machine's thread starts and pool opening.
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    assert_eq!(out.stop_reason(), StopReason::Failure);
    assert!(out.main.counts.balanced(), "{:?}", out.main.counts);
    let warnings = &out.main.warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("failed (panicked: a bug on this thread")),
        "{warnings:?}"
    );
    drop(listener);
}
