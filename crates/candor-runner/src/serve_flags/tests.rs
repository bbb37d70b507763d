//! `candor serve`'s flags made each server's settings, and the flags that do not fit refused.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
}

fn config(args: &[&str]) -> anyhow::Result<ServeConfig> {
    let cli = Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))?;
    to_config(&cli.serve)
}

#[test]
fn defaults() {
    let c = config(&[]).unwrap();
    assert_eq!(c, ServeConfig::new("127.0.0.1:8989".parse().unwrap()));
}

#[test]
fn all_flags() {
    let c = config(&[
        "--listen",
        "127.0.0.1:0",
        "--threads",
        "2",
        "--delay",
        "1ms",
        "--stall-every",
        "10s",
        "--stall-for",
        "2s",
        "--fault",
        "close-mid-response",
        "--fault-every",
        "100",
        "--body-bytes",
        "512",
    ])
    .unwrap();
    assert_eq!(c.threads, 2);
    assert_eq!(c.delay_ns, 1_000_000);
    assert_eq!(
        c.stall,
        Some(Stall {
            every_ns: 10_000_000_000,
            for_ns: 2_000_000_000
        })
    );
    assert_eq!(
        c.fault,
        Some(InjectedFault {
            kind: FaultKind::CloseMidResponse,
            every: 100
        })
    );
    assert_eq!(c.body_bytes, 512);
    assert!(c.describe().contains("2.000s every 10.00s"));
}

#[test]
fn bad_input_is_a_clear_error() {
    let msg = |args: &[&str]| format!("{:#}", config(args).unwrap_err());
    assert!(msg(&["--stall-every", "10s"]).contains("give both or neither"));
    assert!(msg(&["--stall-for", "1s"]).contains("give both or neither"));
    assert!(msg(&["--stall-every", "1s", "--stall-for", "2s"]).contains("shorter"));
    assert!(msg(&["--stall-every", "1s", "--stall-for", "0s"]).contains("longer than zero"));
    assert!(msg(&["--delay", "soon"]).contains("invalid duration 'soon'"));
    assert!(msg(&["--listen", "nowhere"]).contains("invalid --listen address"));
    assert!(msg(&["--threads", "0"]).contains("at least 1"));
    assert!(msg(&["--fault", "explode"]).contains("explode"));
    assert!(msg(&["--fault", "reset", "--fault-every", "0"]).contains("at least 1"));
    assert!(
        config(&["--fault-every", "3"]).is_err(),
        "--fault-every needs --fault"
    );
}

fn llm_config(args: &[&str]) -> anyhow::Result<LlmConfig> {
    let cli = Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied()))?;
    to_llm_config(&cli.serve)
}

#[test]
fn llm_flags() {
    let c = llm_config(&[
        "--llm",
        "--listen",
        "127.0.0.1:0",
        "--ttft",
        "250ms",
        "--itl",
        "15ms",
        "--output-tokens",
        "64",
        "--stall-every",
        "5s",
        "--stall-for",
        "1s",
        "--llm-fault",
        "no-done",
        "--fault-every",
        "10",
        "--model",
        "m1",
        "--prefill-per-token",
        "500us",
        "--prefix-cache",
        "1000",
    ])
    .unwrap();
    assert_eq!(c.prefill_per_token_ns, 500_000);
    assert_eq!(c.prefix_cache_blocks, 1000);
    assert_eq!(c.ttft_ns, 250_000_000);
    assert_eq!(c.itl_ns, 15_000_000);
    assert_eq!(c.output_tokens, 64);
    assert_eq!(c.model, "m1");
    assert_eq!(
        c.fault,
        Some(LlmFault {
            kind: LlmFaultKind::NoDone,
            every: 10
        })
    );
    assert!(c.stall.is_some());
    let d = llm_config(&["--llm"]).unwrap();
    assert_eq!(d, LlmConfig::new("127.0.0.1:8989".parse().unwrap()));
}

#[test]
fn llm_flags_that_do_not_fit_are_refused() {
    let msg = |args: &[&str]| format!("{:#}", llm_config(args).unwrap_err());
    // Flags of the other server, and --llm's own without --llm.
    assert!(msg(&["--llm", "--delay", "1ms"]).contains("--delay"));
    assert!(msg(&["--llm", "--fault", "reset"]).contains("--fault"));
    assert!(msg(&["--ttft", "1ms"]).contains("--llm"));
    assert!(msg(&["--llm", "--output-tokens", "0"]).contains("at least 1"));
    assert!(msg(&["--llm", "--ttft", "soon"]).contains("invalid duration 'soon'"));
    assert!(msg(&["--llm", "--llm-fault", "explode"]).contains("explode"));
    assert!(msg(&["--llm", "--llm-fault", "no-done", "--fault-every", "0"]).contains("at least 1"));
    assert!(msg(&["--prefix-cache", "10"]).contains("--llm"));
    assert!(msg(&["--llm", "--prefix-cache", "-1"]).contains("-1"));
    assert!(msg(&["--llm", "--prefix-cache", "99999999"]).contains("at most 4194304 blocks"));
}
