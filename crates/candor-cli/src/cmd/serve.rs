//! `candor serve`: runs the built-in HTTP/1.1 test server (optionally slow, stalling or faulty),
//! or with `--llm` the OpenAI-compatible streaming server, until SIGINT or SIGTERM.

use std::io::Write;

use anyhow::Context;
pub use candor_runner::serve_flags::ServeArgs;
use candor_runner::serve_flags::{to_config, to_llm_config};
use candor_serve::settings::AnyServer;

pub fn main(args: ServeArgs) -> anyhow::Result<i32> {
    let (summary, server) = if args.llm {
        let config = to_llm_config(&args)?;
        let summary = config.describe();
        let server = candor_serve::llm::start(config).context("starting the server")?;
        (summary, AnyServer::Llm(server))
    } else {
        let config = to_config(&args)?;
        let summary = config.describe();
        let server = candor_serve::start(config).context("starting the server")?;
        (summary, AnyServer::Http(server))
    };
    // Registered before announcing, so a signal sent as soon as the line appears is honoured.
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing signal handlers")?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "candor serve: listening on http://{} ({summary})",
        server.local_addr()
    )
    .and_then(|_| out.flush())
    .context("writing to stdout")?;
    drop(out);
    let _ = signals.forever().next();
    let served = server.requests_served();
    server.shutdown();
    // Best effort: whoever started us may have stopped reading stdout after the banner.
    let _ = writeln!(
        std::io::stdout(),
        "candor serve: stopped after {served} requests"
    );
    Ok(0)
}
