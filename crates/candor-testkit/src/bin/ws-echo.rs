//! The WebSocket test server (`candor_testkit::ws_server`) as a program, for benchmarks and
//! by-hand runs: prints its address, then echoes until killed.
//!
//! `ws-echo [--delay-ms N] [--stall-ms EVERY:LENGTH] [--reorder] [--fragment] [--ping-ms N]`

use candor_testkit::ws_server::{self, WsServerConfig};
use std::time::Duration;

fn main() {
    let mut config = WsServerConfig::default();
    let mut args = std::env::args().skip(1);
    let ms = |v: Option<String>, flag: &str| -> Duration {
        let v = v.unwrap_or_else(|| fail(&format!("{flag} needs a value")));
        Duration::from_millis(
            v.parse()
                .unwrap_or_else(|_| fail(&format!("{flag}: not a number of milliseconds: {v}"))),
        )
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--delay-ms" => config.delay = ms(args.next(), "--delay-ms"),
            "--ping-ms" => config.ping_every = Some(ms(args.next(), "--ping-ms")),
            "--reorder" => config.reorder_pairs = true,
            "--fragment" => config.fragment = true,
            "--stall-ms" => {
                let v = args.next().unwrap_or_default();
                let (every, length) = v
                    .split_once(':')
                    .unwrap_or_else(|| fail("--stall-ms needs EVERY:LENGTH"));
                config.stall = Some((
                    ms(Some(every.into()), "--stall-ms"),
                    ms(Some(length.into()), "--stall-ms"),
                ));
            }
            other => fail(&format!("unknown argument {other}")),
        }
    }
    let server = ws_server::start(config).unwrap_or_else(|e| fail(&e.to_string()));
    println!("{}", server.addr());
    loop {
        std::thread::park();
    }
}

fn fail(message: &str) -> ! {
    eprintln!("ws-echo: error: {message}");
    std::process::exit(2)
}
