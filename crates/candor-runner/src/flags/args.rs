//! The flags of `candor run` as the user types them (and the load flags that `sweep`,
//! `capacity` and `k8s` share): their names, help texts and defaults, parsed by clap.

use candor_core::units::DurationArg;
use clap::{Args, ValueEnum};

/// `--sharegpt-budget`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum SharegptBudgetArg {
    Answer,
    Drawn,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced intended send times.
    Constant,
    /// Exponential gaps between intended send times (a Poisson process), seeded by --seed.
    Poisson,
}

/// The load settings shared by `run`, `sweep` and `capacity` (which set the rate themselves, so
/// the rate flags live in [`RunArgs`]).
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Number of connections kept open to the target (at least one per thread).
    #[arg(short = 'c', long, default_value_t = candor_load::config::DEFAULT_CONNECTIONS)]
    pub connections: usize,
    /// Number of load threads; connections and rate are shared evenly between them. Default 2,
    /// or -c when fewer connections are asked for; a -t above -c is refused (each thread needs a
    /// connection), as wrk refuses it.
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<usize>,
    /// Length of the measured window, with its unit: us, ms, s, m or h (a bare number is refused).
    /// Default 10s.
    #[arg(short = 'd', long, value_name = "DUR", allow_hyphen_values = true)]
    pub duration: Option<DurationArg>,
    /// A request with no full response this long after it was written fails as a timeout
    /// (its response time is recorded as its age at that moment) and its connection is reopened.
    /// With its unit (a bare number is refused). In --llm runs (and --stream runs given
    /// --stream-timeout) it bounds only the wait for the first event.
    #[arg(
        short = 'T',
        long,
        default_value = candor_load::config::DEFAULT_TIMEOUT,
        value_name = "DUR",
        allow_hyphen_values = true
    )]
    pub timeout: DurationArg,
    /// --stream/--llm: a streamed response whose next event does not come within DUR of its
    /// previous event fails (class "stream", named event_timeout, its events counted) and its
    /// connection is closed (HTTP/2: its stream is reset). Before the first event only
    /// --timeout bounds the wait.
    #[arg(long, value_name = "DUR")]
    pub event_timeout: Option<DurationArg>,
    /// --stream/--llm: once a streamed response's first event has come, it fails as a timeout
    /// if it has not ended DUR after it was sent (what it delivered is counted); --timeout then
    /// bounds only the wait for the first event. Default with --llm: 60s; with --stream: none
    /// (--timeout bounds the whole response).
    #[arg(long, value_name = "DUR")]
    pub stream_timeout: Option<DurationArg>,
    /// --llm: goodput as vLLM defines it, the requests per second that meet every one of
    /// these per-request objectives, judged on each request's own TTFT, TPOT and end-to-end
    /// latency (from the intended send; the actual-send twin is reported beside it), e.g.
    /// 'ttft<500ms,tpot<50ms,e2el<5s' or vLLM's 'ttft:500 tpot:50' (ms, at most). Without it
    /// an --llm run takes these bounds from its --slo objectives on ttft, tpot and the
    /// response time (the loosest limit of each).
    #[arg(long, value_name = "SLOS")]
    pub goodput: Option<String>,
    /// At most N requests in flight, as vLLM's `bench serve --max-concurrency`: the others wait
    /// in the client, and their wait counts from their intended send (it shows as send lag and
    /// in TTFT, not in TTFT from the actual send). Over HTTP/1.1 it is `-c N` (one request per
    /// connection at a time); refused where a connection carries several (HTTP/2: use -c and
    /// --streams).
    #[arg(
        long,
        value_name = "N",
        requires = "llm",
        conflicts_with = "connections"
    )]
    pub max_concurrency: Option<usize>,
    /// Extra request header, "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = candor_load::config::DEFAULT_METHOD)]
    pub method: String,
    /// Request body (sent with a Content-Length header).
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Read the request body from a file.
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<std::path::PathBuf>,
    /// Run the same load for this long first; it is measured but reported separately and
    /// excluded from the main results (`run`: none by default; each step of `sweep` and
    /// `capacity`: 1s unless given, `--warmup 0s` included).
    #[arg(long, value_name = "DUR")]
    pub warmup: Option<DurationArg>,
    /// How intended send times are spaced.
    #[arg(long, value_enum, default_value = "constant")]
    pub arrival: ArrivalArg,
    /// Seed of the Poisson arrival generator (same seed, same schedule).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// After the last intended send, wait this long for outstanding requests (default: the timeout);
    /// whatever is still unfinished is reported with its age.
    #[arg(long, value_name = "DUR")]
    pub drain: Option<DurationArg>,
    /// Advanced: spin on the clock for this long before each intended send instead of sleeping
    /// (precision against CPU use; 0 never spins). Default: as long as this machine's measured
    /// timer wake-up lateness requires to keep send lag p99 within 25us.
    #[arg(long, value_name = "DUR")]
    pub spin: Option<DurationArg>,
    /// Run as shard I of N of one schedule (0-based): this process sends its share 1/N of the
    /// total rate, interleaved so that the N shards together form the single-process schedule.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Wall-clock instant of the first intended send (RFC 3339, e.g. 2026-11-21T23:00:00Z, or Unix
    /// epoch seconds), so that shards on several machines begin together. The run waits for it
    /// (a signal ends the wait); one more than a day ahead needs --start-at-far. One already past
    /// is missed: the schedule starts when the connections are ready, and the lateness is reported.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Accept a --start-at more than a day ahead (a typo in a date would otherwise wait for years).
    #[arg(long, requires = "start_at")]
    pub start_at_far: bool,
    /// HTTP/1.1 pipelining: up to N requests in flight per connection, each timed from its own
    /// intended send time.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub pipeline: usize,
    /// The protocol switches (`--h2`, ...), as the registry lists them.
    #[command(flatten)]
    pub switches: super::switches::ProtocolSwitches,
    /// HTTP/2: concurrent streams per connection; WebSocket: messages in flight per connection.
    /// A due request waits for a free place.
    #[arg(long, default_value_t = candor_load::config::DEFAULT_STREAMS, value_name = "N")]
    pub streams: usize,
    /// WebSocket: how a reply is matched to its message: 'order' (the next reply answers the
    /// oldest unanswered message) or 'json:FIELD' (candor writes a unique number into each
    /// message's top-level FIELD and matches the reply carrying it).
    #[arg(long, value_name = "order|json:FIELD")]
    pub ws_match: Option<String>,
    /// WebSocket: send messages as binary frames (default: text).
    #[arg(long)]
    pub ws_binary: bool,
    /// HTTPS: do not verify the server certificate (traffic is still encrypted).
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// HTTPS: trust the certificates in this PEM file instead of the system roots, as issuers or
    /// as the server's own certificate (a self-signed one, even if marked as a CA).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
    /// Many different requests: a JSON-lines file, one {"method", "path", "headers", "body"} per
    /// line (see docs/protocols.md); all are encoded before the run.
    #[arg(long, value_name = "FILE")]
    pub requests: Option<std::path::PathBuf>,
    /// How the next request of --requests is chosen.
    #[arg(long, value_enum, default_value = "round-robin")]
    pub request_order: RequestOrderArg,
    /// tcp://: the bytes sent per request: text with \r \n \t \0 escapes, or hex:0a0b...
    #[arg(long, conflicts_with = "payload_file")]
    pub payload: Option<String>,
    /// tcp://: read the request payload from a file (sent verbatim).
    #[arg(long, value_name = "FILE")]
    pub payload_file: Option<std::path::PathBuf>,
    /// tcp://: a response is exactly N bytes.
    #[arg(long, value_name = "N", group = "framing")]
    pub expect_bytes: Option<usize>,
    /// tcp://: a response ends with this string (escapes as in --payload), e.g. '\r\n'.
    #[arg(long, value_name = "STR", group = "framing")]
    pub expect_delimiter: Option<String>,
    /// tcp://: a response is a big-endian length prefix then that many bytes: u8, u16be, u32be, u64be.
    #[arg(long, value_name = "KIND", group = "framing")]
    pub length_prefix: Option<String>,
    /// Read every response's body as a stream of events: sse (server-sent events), chunks
    /// (each HTTP/1.1 chunk) or lines (newline-delimited JSON), timing the first event and the
    /// gaps between events. Without it, a response whose Content-Type is text/event-stream is
    /// read as server-sent events.
    #[arg(long, value_name = "KIND", value_parser = ["sse", "chunks", "lines"])]
    pub stream: Option<String>,
    /// Benchmark an OpenAI-compatible LLM server: POST /v1/chat/completions (openai) or
    /// /v1/completions (openai-completions), streaming with usage; measures TTFT, ITL, TPOT and
    /// output tokens. openai-embeddings: POST /v1/embeddings, latency and inputs/s. The URL is
    /// the server's base (its path is replaced).
    #[arg(long, value_name = "API", value_parser = ["openai", "openai-completions", "openai-embeddings"],
          conflicts_with_all = ["requests", "body", "body_file", "method"])]
    pub llm: Option<String>,
    /// --llm: the model name sent with every request [default: the first model the server's
    /// /v1/models lists, as vLLM's bench serve takes it; "default" when it lists none].
    #[arg(long, value_name = "NAME", requires = "llm")]
    pub model: Option<String>,
    /// --llm: prompts, one JSON object per line: {"prompt": "...", "max_tokens": N} or
    /// {"messages": [...], "max_tokens": N}; any other field of a line (temperature, ignore_eos,
    /// top_p, seed, ...) is sent in its request's body unchanged.
    #[arg(
        long,
        value_name = "FILE",
        requires = "llm",
        conflicts_with = "prompt_tokens"
    )]
    pub prompts: Option<std::path::PathBuf>,
    /// --llm: prompts from a ShareGPT-format JSON file (vLLM's --dataset-name sharegpt): the
    /// first user turn of conversations that have an answer, pruned and sampled as vLLM's
    /// benchmark does (see --sharegpt-prompts, --sharegpt-keep-all).
    #[arg(long, value_name = "FILE", requires = "llm", conflicts_with_all = ["prompts", "prompt_tokens", "prefix_tokens"])]
    pub sharegpt: Option<std::path::PathBuf>,
    /// --sharegpt: each prompt's output budget: answer (its recorded answer's length, as vLLM
    /// does) or drawn (--output-tokens).
    #[arg(
        long,
        value_name = "FROM",
        requires = "sharegpt",
        value_enum,
        default_value = "answer"
    )]
    pub sharegpt_budget: SharegptBudgetArg,
    /// --sharegpt: how many prompts to take (vLLM's --num-prompts), a random sample seeded by
    /// --seed of the conversations kept, sent round robin in a random order.
    #[arg(long, value_name = "N", requires = "sharegpt", default_value_t = 1000)]
    pub sharegpt_prompts: usize,
    /// --sharegpt: take the first --sharegpt-prompts conversations kept, in the file's order,
    /// rather than a random sample.
    #[arg(long, requires = "sharegpt")]
    pub sharegpt_first: bool,
    /// --sharegpt: keep every usable conversation; by default, as vLLM, a prompt or answer
    /// under 4 tokens, a prompt over 1,024 or prompt + answer over 2,048 is pruned (counted by
    /// --tokenizer, else a token is 3/4 of a word; the answer judged only with
    /// --sharegpt-budget answer).
    #[arg(long, requires = "sharegpt")]
    pub sharegpt_keep_all: bool,
    /// --llm without --prompts: synthetic prompts of N tokens (a token is 3/4 of a word), or
    /// lengths drawn per prompt (seeded by --seed): uniform:LO..HI or normal:MEAN,SD[,LO..HI].
    #[arg(long, value_name = "N", requires = "llm", default_value = "128")]
    pub prompt_tokens: candor_load::workload::synthetic::Lengths,
    /// --llm without --prompts: the output tokens each synthetic prompt asks for (N,
    /// uniform:LO..HI or normal:MEAN,SD[,LO..HI]).
    #[arg(long, value_name = "N", requires = "llm", default_value = "128")]
    pub output_tokens: candor_load::workload::synthetic::Lengths,
    /// --llm without --prompts: every synthetic prompt starts with the same N tokens (a
    /// prefix cache's test), before its own --prompt-tokens.
    #[arg(
        long,
        value_name = "N",
        requires = "llm",
        default_value_t = 0,
        conflicts_with = "prompts"
    )]
    pub prefix_tokens: u64,
    /// --sharegpt: send whole conversations: each user turn a request whose messages hold the
    /// turns and recorded answers before it, the next turn sent when the previous one completes
    /// (plus --think-time); the schedule (-R, --arrival) starts the conversations.
    #[arg(long, requires = "sharegpt")]
    pub multi_turn: bool,
    /// --multi-turn: at most N turns of each conversation (default: all its answered turns).
    #[arg(long, value_name = "N", requires = "multi_turn")]
    pub max_turns: Option<u32>,
    /// --llm without --prompts: synthetic conversations of N turns (each turn --prompt-tokens
    /// long, each recorded answer --output-tokens long), the next turn sent when the previous
    /// one completes (plus --think-time); the schedule starts the conversations.
    #[arg(long, value_name = "N", requires = "llm",
          conflicts_with_all = ["prompts", "sharegpt", "prefix_tokens"])]
    pub turns: Option<u32>,
    /// --multi-turn, --turns: the wait from a turn's completion to the intended send of the
    /// conversation's next turn (default 0): a duration (20ms), or drawn per turn, seeded by
    /// --seed: uniform:LO..HI, normal:MEAN,SD[,LO..HI], exp:MEAN (durations).
    #[arg(long, value_name = "DURATION|DIST")]
    pub think_time: Option<candor_load::workload::think::ThinkTime>,
    /// --llm: count tokens exactly with this tokenizer: a tiktoken encoding embedded in candor
    /// (cl100k_base, o200k_base) or a Hugging Face tokenizer.json file. Synthetic prompts are
    /// then exactly --prompt-tokens (and --prefix-tokens) long, and ShareGPT answers' lengths
    /// are counted by it. Without it, a token is 3/4 of a word (an estimate).
    #[arg(long, value_name = "NAME|FILE", requires = "llm")]
    pub tokenizer: Option<String>,
    /// --llm: ask for whole answers ("stream": false) instead of streams: each request's
    /// latency and the tokens of its answer's usage (no TTFT, ITL or TPOT); the whole answer
    /// is bounded by --stream-timeout (or -T, whichever is longer).
    #[arg(long, requires = "llm")]
    pub no_stream: bool,
    /// --llm openai-embeddings: inputs per request (vLLM's bench serve sends one; guidellm's
    /// embeddings requests one each), from 1 to 2048 [default: 1].
    #[arg(long, value_name = "N", requires = "llm")]
    pub embedding_batch: Option<u32>,
    /// --llm: a JSON object of body fields merged into every request, e.g.
    /// '{"ignore_eos": true, "temperature": 0}' (a --prompts line's own fields win).
    #[arg(long, value_name = "JSON", requires = "llm")]
    pub llm_body: Option<String>,
    /// --llm: how the output budget is spelled in the body: max_tokens (every OpenAI-compatible
    /// server) or max_completion_tokens (OpenAI's chat API; vLLM's bench serve for chat). A
    /// --prompts line's own spelling is kept.
    #[arg(long, value_name = "FIELD", requires = "llm", default_value = "max_tokens",
          value_parser = ["max_tokens", "max_completion_tokens"])]
    pub max_tokens_field: String,
    /// HTTP statuses that count as success: codes, classes or ranges, e.g. '200,404' or
    /// '2xx,3xx'; any other response fails (class "status"), its latency still recorded.
    /// Default: everything below 400. For gRPC targets, grpc-status names or numbers, e.g.
    /// 'OK,NOT_FOUND' (default OK); any other fails in class "grpc".
    #[arg(long, value_name = "LIST")]
    pub check_status: Option<String>,
    /// The body of every response must contain this text (matched as the body streams in); a
    /// response without it fails in class "check", its latency still recorded.
    #[arg(long, value_name = "TEXT")]
    pub check_body: Option<String>,
    /// Every response must carry this header with this value, 'Name: value' (repeatable); a
    /// response without it fails in class "check".
    #[arg(long, value_name = "HEADER")]
    pub check_header: Vec<String>,
    /// Values for {{data:COLUMN}} placeholders: a CSV file with a header row (RFC 4180 quoting);
    /// request seq takes row seq mod rows, or a random row with --data-order random.
    #[arg(long, value_name = "FILE.csv")]
    pub data: Option<std::path::PathBuf>,
    /// How rows of --data are taken.
    #[arg(long, value_enum, default_value = "sequential")]
    pub data_order: DataOrderArg,
    /// Take the schedule and the requests from a trace: JSON lines ({"at": seconds, "path", ...})
    /// or an NCSA common/combined access log; each record is sent at its offset from the first.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["requests", "data"])]
    pub replay: Option<std::path::PathBuf>,
    /// Replay this many times faster than recorded (0.5 = half speed).
    #[arg(long, default_value_t = 1.0, value_name = "X", requires = "replay")]
    pub speed: f64,
    /// Replay a trace with more than 1% malformed lines, skipping them (they are counted).
    #[arg(long, requires = "replay")]
    pub lenient: bool,
    /// gRPC: the method to call, package.Service/Method.
    #[arg(long, value_name = "METHOD")]
    pub call: Option<String>,
    /// gRPC: a .proto file describing the service (repeatable), compiled in process (no protoc).
    #[arg(long, value_name = "FILE.proto")]
    pub proto: Vec<std::path::PathBuf>,
    /// gRPC: a directory where --proto files and their imports are found (repeatable).
    #[arg(long, value_name = "DIR")]
    pub import_path: Vec<std::path::PathBuf>,
    /// gRPC: fetch the service's descriptors from the server's reflection service instead of
    /// --proto.
    #[arg(long)]
    pub reflect: bool,
    /// Target URL: http://host:port/path (port optional), https://..., ws://host:port/path or
    /// wss://... (WebSocket), tcp://host:port, or grpc://host:port (gRPC over HTTP/2 in the
    /// clear), grpcs://host:port (over TLS) with --call.
    /// `http://user:password@host/` sends Basic authorization (percent-decoded, as curl does)
    /// unless an Authorization header is given.
    pub url: String,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DataOrderArg {
    /// Row seq mod rows: in file order, wrapping.
    Sequential,
    /// A random row per request (seeded by --seed).
    Random,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RequestOrderArg {
    /// Cycle through the requests in file order.
    RoundRobin,
    /// Pick uniformly at random (seeded by --seed).
    Random,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Total intended requests per second across all threads (k and M suffixes accepted), or
    /// "max" for a closed loop where each connection sends as soon as its previous response arrives,
    /// or a load profile: comma-separated stages RATE:DUR (hold) and FROM..TO:DUR (linear ramp),
    /// e.g. 500:30s,500..5000:2m,5000:1m; the run then lasts the stages' sum (-d may be left out,
    /// or must equal it).
    #[arg(
        short = 'R',
        long = "rate",
        default_value = candor_load::config::DEFAULT_RATE,
        value_name = "RATE",
        allow_hyphen_values = true,
        conflicts_with = "replay"
    )]
    pub rate: String,
    /// Send exactly N requests on the schedule of -R (constant arrival) instead of running for
    /// -d: the window lasts N / rate.
    #[arg(
        short = 'n',
        long = "requests-total",
        value_name = "N",
        conflicts_with = "duration"
    )]
    pub count: Option<u64>,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Print the full percentile spectrum of response time (and service time) in the .hgrm layout.
    #[arg(short = 'L', long)]
    pub latency: bool,
    /// Write the results as JSON to FILE ("-" for stdout; the text report then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Write an HdrHistogram interval log (format 1.3, one line per second and measure: untagged =
    /// response time, Tag=service_time, Tag=send_lag), readable by HdrHistogram's Java tools.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<String>,
    /// Write the response-time percentile distribution (.hgrm, in milliseconds) as Java prints it.
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<String>,
    /// Write one JSON line per request to FILE (.jsonl): its intended and actual send, first
    /// byte, stream events and tokens, outcome and class, in ns from the run's start (fields in
    /// docs/formats.md; with --repeat each line names its run); `candor report FILE` reads it back.
    #[arg(long, value_name = "FILE")]
    pub records: Option<std::path::PathBuf>,
    /// No live progress line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Service-level objectives on response time, e.g. 'p99<10ms,p99.9<50ms,max<1s,errors<0.1%':
    /// one PASS/FAIL line each after the report; exit code 3 if any fails. With -R stages, each
    /// stage is judged too (shown and recorded; the exit code is the whole run's).
    #[arg(long, value_name = "SLO")]
    pub slo: Vec<String>,
    /// Stop as soon as an objective of --slo can no longer pass (the error budget is spent, the
    /// rate stayed below its objective for 5 consecutive seconds, a latency bound is already
    /// broken for the whole run); exit code 3, naming the objective and the moment.
    #[arg(long, requires = "slo")]
    pub abort_on_fail: bool,
    /// Run until precise: end the measured window once the 95% confidence interval of the
    /// percentile lies within ±X% of its estimate, e.g. 'p99=5%' (repeatable; all must be reached;
    /// -d is the upper bound).
    #[arg(long, value_name = "PNN=X%", conflicts_with = "count")]
    pub precision: Vec<String>,
    /// Pause this process (SIGSTOP, then SIGCONT) during the run, e.g. the server under test.
    #[arg(long, value_name = "PID", requires_all = ["pause_at", "pause_for"])]
    pub pause_pid: Option<i32>,
    /// When to pause, from the first intended send (warm-up included).
    #[arg(long, value_name = "DUR", requires = "pause_pid")]
    pub pause_at: Option<String>,
    /// How long the pause lasts.
    #[arg(long, value_name = "DUR", requires = "pause_pid")]
    pub pause_for: Option<String>,
    /// With a pause: print the response-time distribution the pause predicts beside the measured one.
    #[arg(long, requires = "pause_pid")]
    pub expect: bool,
    #[command(flatten)]
    pub live_view: crate::live_view::LiveArgs,
    #[command(flatten)]
    pub push: crate::push_view::PushArgs,
    /// A wrk Lua script (wrk 4 and wrk2 API): its request() makes every request, its
    /// response() judges every response (false or wrk.fail("why") fails it as `check`), its
    /// done() reports after the run. See docs/scripts.md.
    #[arg(short = 's', long, value_name = "FILE")]
    pub script: Option<std::path::PathBuf>,
    /// Most memory each of the script's Lua states may hold (the setup state and one per load
    /// thread), e.g. `64MiB`, `1GiB`: an allocation past it fails the callback that made it and
    /// stops the run (default 256MiB).
    #[arg(long, value_name = "SIZE", requires = "script", value_parser = parse_script_memory)]
    pub script_memory: Option<usize>,
    /// Arguments for the script's init(args), after `--` (`args[0]` is the URL, as in wrk).
    #[arg(last = true, value_name = "SCRIPT_ARGS", requires = "script")]
    pub script_args: Vec<String>,
    /// Run the test N times, --repeat-pause apart: the results hold each run and their union, and `candor compare` judges across runs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with_all = ["precision", "pause_pid", "abort_on_fail", "start_at", "shard", "live"])]
    pub repeat: Option<u32>,
    /// The pause between repeats (default 1s).
    #[arg(long, value_name = "DUR", requires = "repeat")]
    pub repeat_pause: Option<DurationArg>,
}

impl RunArgs {
    /// `--slo`, `--precision`, `--abort-on-fail`, the pause and `--expect`, parsed.
    pub fn extras(
        &self,
    ) -> std::result::Result<crate::extras::ExtrasFlags, crate::extras::ExtrasError> {
        crate::extras::ExtrasFlags::parse(
            &self.slo,
            &self.precision,
            self.abort_on_fail,
            (
                self.pause_pid,
                self.pause_at.as_deref(),
                self.pause_for.as_deref(),
            ),
            self.expect,
        )
    }
}

impl LoadArgs {
    /// `-d` as given (`None`: not given).
    pub fn duration_ns(&self) -> Option<u64> {
        self.duration.as_ref().map(DurationArg::ns)
    }
}

/// `--script-memory`: bytes, or a number with `KiB`, `MiB` or `GiB` (`K`, `M`, `G` the same), at
/// least 1 MiB (a Lua state with its libraries and the wrk module holds a few hundred KiB).
fn parse_script_memory(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(format!("{s:?} is not a size (say 64MiB or 1GiB)")),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (say 64MiB or 1GiB)"))?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))?;
    if bytes < 1 << 20 {
        return Err(format!(
            "{s:?} is less than 1MiB, too little for a Lua state"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::parse_script_memory;

    #[test]
    fn sizes_in_bytes_and_binary_units() {
        assert_eq!(parse_script_memory("64MiB"), Ok(64 << 20));
        assert_eq!(parse_script_memory("1G"), Ok(1 << 30));
        assert_eq!(parse_script_memory("2097152"), Ok(2 << 20));
        assert!(parse_script_memory("512KiB").is_err());
        assert!(parse_script_memory("lots").is_err());
        assert!(parse_script_memory("99999999999999999999G").is_err());
    }
}
