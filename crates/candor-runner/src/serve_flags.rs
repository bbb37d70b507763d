//! `candor serve`'s flags, and the settings of each server made from them: the built-in HTTP/1.1
//! test server's (`to_config`) or, with `--llm`, the OpenAI-compatible streaming server's
//! (`to_llm_config`); the flags that do not fit are refused in one line.

use anyhow::bail;
use candor_core::units::DurationArg;
use candor_serve::llm::{LlmConfig, LlmFault, LlmFaultKind};
use candor_serve::settings::{self, fault_every, parse_listen};
use candor_serve::{FaultKind, InjectedFault, ServeConfig, Stall};
use clap::builder::PossibleValuesParser;
use clap::{ArgGroup, Args};

#[derive(Args, Debug, Clone)]
#[command(group(ArgGroup::new("faults").args(["fault", "llm_fault"])))]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8989")]
    pub listen: String,
    /// Worker threads, each with its own event loop.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
    /// Fixed service time: answer each request this long after reading it (e.g. 1ms).
    /// Connections are served concurrently, so capacity is connections / delay.
    #[arg(long, value_name = "DUR")]
    pub delay: Option<DurationArg>,
    /// Stall period: every DUR the whole server freezes for --stall-for (e.g. 10s).
    #[arg(long, value_name = "DUR")]
    pub stall_every: Option<DurationArg>,
    /// Stall length: the last DUR of every --stall-every period, nothing is answered (e.g. 2s).
    #[arg(long, value_name = "DUR")]
    pub stall_for: Option<DurationArg>,
    /// Misbehave deliberately: RST the connection, close mid-response, send garbage, or close
    /// without answering.
    #[arg(long, value_name = "KIND",
          value_parser = PossibleValuesParser::new(["reset", "close-mid-response", "garbage", "close"]))]
    pub fault: Option<String>,
    /// Apply --fault to every Nth request (1 = all of them).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "faults")]
    pub fault_every: u64,
    /// Response body size in bytes.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub body_bytes: usize,
    /// Never sleep: poll the sockets without blocking, each worker thread a core at 100%. For
    /// benchmarks of a client's limits on one machine, where a sleeping server's wake-up is
    /// paid inside the client's send (loopback delivers in the sender's system call).
    #[arg(long)]
    pub busy_poll: bool,
    /// Serve OpenAI-compatible streaming completions (`POST /v1/chat/completions`,
    /// `/v1/completions`) whose timing is known: the first token --ttft after the request is
    /// read, then one every --itl, --output-tokens of them; stalls hold every write.
    #[arg(long, conflicts_with_all = ["threads", "delay", "fault", "body_bytes", "busy_poll"])]
    pub llm: bool,
    /// With --llm: time from reading a request to its first token [default: 100ms].
    #[arg(long, value_name = "DUR", requires = "llm")]
    pub ttft: Option<DurationArg>,
    /// With --llm: time between consecutive tokens [default: 20ms].
    #[arg(long, value_name = "DUR", requires = "llm")]
    pub itl: Option<DurationArg>,
    /// With --llm: tokens per answer; a request's smaller max_tokens lowers it [default: 128].
    #[arg(long, value_name = "N", requires = "llm")]
    pub output_tokens: Option<u32>,
    /// With --llm: fail deliberately: answer 429, send an error event mid-stream, end without
    /// the final DONE event, or close the connection mid-stream.
    #[arg(long, value_name = "KIND", requires = "llm",
          value_parser = PossibleValuesParser::new(LlmFaultKind::ALL.map(LlmFaultKind::name)))]
    pub llm_fault: Option<String>,
    /// With --llm: the model name the answers carry [default: candor-truth].
    #[arg(long, value_name = "NAME", requires = "llm")]
    pub model: Option<String>,
    /// With --llm: never send usage (token counts) in a stream, even when asked, as some
    /// servers do.
    #[arg(long, requires = "llm")]
    pub no_usage: bool,
    /// With --llm: each prompt token not served from the prefix cache adds DUR to the time to
    /// the first token (prompt tokens counted as 4/3 of its words) [default: 0].
    #[arg(long, value_name = "DUR", requires = "llm")]
    pub prefill_per_token: Option<DurationArg>,
    /// With --llm: keep a prefix cache of N blocks of 16 tokens (12 words), as vLLM's automatic
    /// prefix caching: a prompt's leading blocks found there are not computed again, and usage
    /// says them as prompt_tokens_details.cached_tokens [default: 0, no cache].
    #[arg(long, value_name = "BLOCKS", requires = "llm")]
    pub prefix_cache: Option<usize>,
    /// With --llm: close a connection that sends no request for DUR, whose body stops for DUR,
    /// or that reads nothing of an answer for DUR [default: 60s].
    #[arg(long, value_name = "DUR", requires = "llm")]
    pub idle_timeout: Option<DurationArg>,
    /// With --llm: answer 408 and close when a request's head has not ended DUR after its
    /// first byte, or its body DUR plus its length at 64 KiB/s after the head [default: 10s].
    #[arg(long, value_name = "DUR", requires = "llm")]
    pub head_timeout: Option<DurationArg>,
    /// With --llm: time from reading an embeddings request (/v1/embeddings) to its answer
    /// [default: 20ms].
    #[arg(long, value_name = "DUR", requires = "llm")]
    pub embed_latency: Option<DurationArg>,
    /// With --llm: an embeddings answer also waits DUR per input token (4/3 of a word)
    /// [default: 0].
    #[arg(long, value_name = "DUR", requires = "llm")]
    pub embed_per_token: Option<DurationArg>,
    /// With --llm: the values of every embedding vector, 1 to 4096 [default: 16].
    #[arg(long, value_name = "N", requires = "llm")]
    pub embed_dim: Option<u32>,
}

pub fn to_config(args: &ServeArgs) -> anyhow::Result<ServeConfig> {
    let listen = parse_listen(&args.listen)?;
    let mut config = ServeConfig::new(listen);
    if args.threads == 0 {
        bail!("--threads must be at least 1");
    }
    config.threads = args.threads;
    if let Some(d) = &args.delay {
        config.delay_ns = d.ns();
    }
    config.stall = stall(args)?;
    if let Some(kind) = &args.fault {
        let kind: FaultKind = kind.parse()?;
        config.fault = Some(InjectedFault {
            kind,
            every: fault_every(args.fault_every)?,
        });
    }
    config.body_bytes = args.body_bytes;
    config.busy_poll = args.busy_poll;
    config.validate()?;
    Ok(config)
}

pub fn to_llm_config(args: &ServeArgs) -> anyhow::Result<LlmConfig> {
    let mut config = LlmConfig::new(parse_listen(&args.listen)?);
    if let Some(d) = &args.ttft {
        config.ttft_ns = d.ns();
    }
    if let Some(d) = &args.itl {
        config.itl_ns = d.ns();
    }
    if let Some(n) = args.output_tokens {
        config.output_tokens = n;
    }
    if let Some(m) = &args.model {
        config.model = m.clone();
    }
    config.no_usage = args.no_usage;
    if let Some(d) = &args.prefill_per_token {
        config.prefill_per_token_ns = d.ns();
    }
    if let Some(n) = args.prefix_cache {
        config.prefix_cache_blocks = n;
    }
    if let Some(d) = &args.idle_timeout {
        config.idle_timeout_ns = d.ns();
    }
    if let Some(d) = &args.head_timeout {
        config.head_timeout_ns = d.ns();
    }
    if let Some(d) = &args.embed_latency {
        config.embed_latency_ns = d.ns();
    }
    if let Some(d) = &args.embed_per_token {
        config.embed_per_token_ns = d.ns();
    }
    if let Some(n) = args.embed_dim {
        config.embed_dim = n;
    }
    config.stall = stall(args)?;
    if let Some(kind) = &args.llm_fault {
        config.fault = Some(LlmFault {
            every: fault_every(args.fault_every)?,
            kind: kind.parse()?,
        });
    }
    config.validate()?;
    Ok(config)
}

/// `--stall-every` and `--stall-for`, checked.
fn stall(args: &ServeArgs) -> anyhow::Result<Option<Stall>> {
    let ns = |d: &Option<DurationArg>| d.as_ref().map(DurationArg::ns);
    Ok(settings::stall(ns(&args.stall_every), ns(&args.stall_for))?)
}

#[cfg(test)]
mod tests;
