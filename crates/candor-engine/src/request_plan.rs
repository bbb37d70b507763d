//! The run's requests compiled from its configuration (the request set, or the one request of
//! the URL, -H and --body): templates, names, weights, per-request statuses and checks, and the
//! bytes of each request encoded once before the run.

use crate::config::{LoadConfig, RequestOrder, RequestSpec};
use crate::seam::unit::{BodyForm, ProtocolUnit, RequestForm};
use crate::shared::Prepared;
use candor_wire::request_form::build_request;
use candor_wire::requests::url_path_template;
use candor_wire::status::StatusSet;
use candor_workload::check::BodyNeedle;
use candor_workload::conversation::ConversationSource;
use candor_workload::pick::Picker;
use candor_workload::runtime::RequestMaker;
use candor_workload::script_source::ScriptSource;
use candor_workload::template::RequestTemplate;
use candor_workload::{CompiledRequests, WorkloadError};
use std::sync::Arc;

/// Compiles the run's requests (the request set, or the one request of the URL, -H and --body)
/// with their names, weights and checks; fails on an unknown placeholder or a missing column.
///
/// `body_form` says how each request's body is compiled (the protocol's
/// [`ProtocolUnit::body_form`]).
pub fn compile_requests(
    config: &LoadConfig,
    body_form: &dyn Fn(usize) -> BodyForm,
) -> Result<CompiledRequests, WorkloadError> {
    let single = [RequestSpec {
        method: config.method.clone(),
        path: url_path_template(&config.target.path),
        headers: config.headers.clone(),
        body: config.body.clone(),
    }];
    let specs: &[RequestSpec] = if config.requests.is_empty() {
        &single
    } else {
        &config.requests
    };
    let w = &config.workload;
    if !w.lines.is_empty() && w.lines.len() != specs.len() {
        return Err(WorkloadError::Invalid(
            "the request-set lines and requests disagree".into(),
        ));
    }
    let data = w.data.as_deref();
    let mut templates = Vec::with_capacity(specs.len());
    for (i, r) in specs.iter().enumerate() {
        let what = if config.requests.is_empty() {
            "the request (URL path, -H, --body)".to_string()
        } else {
            format!("--requests line {}", i + 1)
        };
        let compiled = match body_form(i) {
            // An encoded message: bytes, not text.
            BodyForm::Bytes => RequestTemplate::compile_with_body(
                &r.method,
                &config.target.host_header,
                &r.path,
                &r.headers,
                candor_workload::template::Template::literal(&r.body),
                data,
                &what,
            ),
            // A templated message is JSON: values filled into its strings are escaped.
            BodyForm::JsonTemplate => candor_workload::template::Template::compile_json(
                &String::from_utf8_lossy(&r.body),
                data,
                &format!("{what} body"),
            )
            .and_then(|body| {
                RequestTemplate::compile_with_body(
                    &r.method,
                    &config.target.host_header,
                    &r.path,
                    &r.headers,
                    body,
                    data,
                    &what,
                )
            }),
            BodyForm::Template => RequestTemplate::compile(
                &r.method,
                &config.target.host_header,
                &r.path,
                &r.headers,
                &r.body,
                data,
                &what,
            ),
        };
        templates.push(compiled?);
    }
    if data.is_some() && !templates.iter().any(RequestTemplate::uses_data) {
        return Err(WorkloadError::Invalid(
            "--data is given but no {{data:COLUMN}} placeholder uses it".into(),
        ));
    }
    let mut names: Vec<String> = Vec::new();
    let mut name_of = Vec::with_capacity(specs.len());
    for (i, r) in specs.iter().enumerate() {
        let name = w
            .lines
            .get(i)
            .map_or_else(|| format!("{} {}", r.method, r.path), |l| l.name.clone());
        let index = names.iter().position(|n| *n == name).unwrap_or_else(|| {
            names.push(name);
            names.len() - 1
        });
        name_of.push(index);
    }
    let picker = if w.lines.iter().any(|l| l.weight.is_some()) {
        let weights: Vec<f64> = w.lines.iter().map(|l| l.weight.unwrap_or(1.0)).collect();
        Picker::weighted(&weights).map_err(|e| WorkloadError::Invalid(e.to_string()))?
    } else {
        match config.request_order {
            RequestOrder::RoundRobin => Picker::RoundRobin { n: specs.len() },
            RequestOrder::Random { .. } => Picker::Uniform { n: specs.len() },
        }
    };
    let mut accept = Vec::with_capacity(specs.len());
    let mut checks = Vec::with_capacity(specs.len());
    for i in 0..specs.len() {
        let line = w.lines.get(i);
        accept.push(
            line.and_then(|l| l.check_status)
                .unwrap_or(config.accept_status),
        );
        let mut c = w.checks.clone();
        if let Some(text) = line.and_then(|l| l.check_body.as_deref()) {
            c.body =
                Some(BodyNeedle::new(text.as_bytes()).map_err(|e| {
                    WorkloadError::Invalid(format!("--requests line {}: {e}", i + 1))
                })?);
        }
        checks.push(c);
    }
    Ok(CompiledRequests {
        templated: templates.iter().any(|t| !t.is_constant()),
        templates,
        names,
        name_of,
        picker,
        accept,
        checks,
    })
}

/// The run's requests compiled once for its load threads to share, when they are HTTP requests
/// (a payload is sent as it is): every thread of a target takes the same [`Arc`].
pub fn compile_for(
    config: &LoadConfig,
    protocol: &dyn ProtocolUnit,
) -> Result<Option<Arc<CompiledRequests>>, WorkloadError> {
    match protocol.request_form() {
        RequestForm::Http => {
            compile_requests(config, &|i| protocol.body_form(i)).map(|c| Some(Arc::new(c)))
        }
        RequestForm::Payload(_) => Ok(None),
    }
}

/// The body of request `index` of the set (0 for the one request) filled as entry `seq` of the
/// schedule would fill it: what a gRPC message's JSON template makes, checked against its type
/// before the run.
pub fn filled_body(
    config: &LoadConfig,
    compiled: &CompiledRequests,
    index: usize,
    seq: u64,
) -> Result<Vec<u8>, WorkloadError> {
    use candor_workload::template::{data_row, request_rng, Fill, FillBuffers};
    let mut buffers = FillBuffers::for_templates(&compiled.templates);
    let mut rng = request_rng(config.workload.seed, seq);
    let data = config.workload.data.as_deref();
    let rows = data.map_or(1, |d| d.rows());
    let row = data_row(config.workload.data_order, rows, seq, &mut rng);
    let mut fill = Fill {
        seq,
        row,
        rng: &mut rng,
        data,
    };
    let request = compiled.templates[index]
        .fill(&mut fill, &mut buffers)
        .map_err(|_| {
            WorkloadError::Invalid(format!(
                "request {seq} cannot be made: a value filled in holds a line break or control character"
            ))
        })?;
    let at = request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(request.len(), |p| p + 4);
    Ok(request[at..].to_vec())
}

/// The statuses each request accepts, when a request line has its own `"check_status"`
/// (`None`: every request accepts `--check-status`).
pub fn accept_by_request(config: &LoadConfig) -> Option<Arc<[StatusSet]>> {
    let lines = &config.workload.lines;
    if !lines.iter().any(|l| l.check_status.is_some()) {
        return None;
    }
    Some(
        lines
            .iter()
            .map(|l| l.check_status.unwrap_or(config.accept_status))
            .collect(),
    )
}

/// Whether any response check applies (to every request, or to one line).
pub fn has_checks(config: &LoadConfig) -> bool {
    !config.workload.checks.is_empty()
        || config.workload.lines.iter().any(|l| l.check_body.is_some())
}

/// The request source of a load thread with `slots` slots, when the prepared requests the core
/// chooses by itself do not do (weighted choice, templates, a replayed trace, lines sent to
/// several targets; a script's is [`script_source`]): with it, the one place a source is made
/// from the configuration.
pub fn request_source(
    config: &LoadConfig,
    compiled: &Arc<CompiledRequests>,
    slots: usize,
) -> Option<RequestMaker> {
    if !needs_maker(config, compiled) || config.conversations.is_some() {
        return None;
    }
    let w = &config.workload;
    let extra = config
        .shape
        .replay_plan()
        .map_or(0, |p| p.max_request_bytes + config.target.host_header.len());
    Some(RequestMaker::new(
        compiled.clone(),
        w.data.clone(),
        w.data_order,
        w.seed,
        slots,
        extra,
    ))
}

/// The request source of a multi-turn run: the schedule's entries start conversations (round
/// robin, or uniform by the seed of `--request-order random`) and each turn names the next. It
/// takes the place of the maker: an LLM body is sent as it is, never filled as a template.
pub fn conversation_source(config: &LoadConfig) -> Option<ConversationSource> {
    let c = config.conversations.as_ref()?;
    let (random, seed) = match config.request_order {
        RequestOrder::Random { seed } => (true, seed),
        RequestOrder::RoundRobin => (false, 0),
    };
    Some(ConversationSource::new(c.plan.clone(), random, seed))
}

/// The request source of a load thread of a script run (`-s`) with `slots` slots: one of the
/// script's thread states, which then makes every request (the run starts no more load threads
/// than it made states). Its [`ScriptSource::judge`]s see the responses.
pub fn script_source(config: &LoadConfig, slots: usize) -> Option<ScriptSource> {
    ScriptSource::take(config.workload.script.as_ref()?, slots)
}

/// Whether the load threads need a [`RequestMaker`]: weighted choice, templates, or a
/// replayed trace.
pub fn needs_maker(config: &LoadConfig, compiled: &CompiledRequests) -> bool {
    compiled.templated
        || config.shape.replay_plan().is_some()
        || !config.workload.targets.is_empty()
        || matches!(compiled.picker, Picker::Weighted { .. })
}

/// Encodes every request once, before the run: HTTP/1.1 bytes of the request set (or of the
/// single configured request), or the raw TCP payload.
pub fn prepare_requests(config: &LoadConfig, form: RequestForm<'_>) -> Arc<[Prepared]> {
    if let RequestForm::Payload(payload) = form {
        return vec![Prepared {
            bytes: payload.into(),
            head: false,
        }]
        .into();
    }
    let single = [RequestSpec {
        method: config.method.clone(),
        path: config.target.path.clone(),
        headers: config.headers.clone(),
        body: config.body.clone(),
    }];
    let specs: &[RequestSpec] = if config.requests.is_empty() {
        &single
    } else {
        &config.requests
    };
    specs
        .iter()
        .map(|r| Prepared {
            bytes: build_request(
                &r.method,
                &config.target.host_header,
                &r.path,
                &r.headers,
                &r.body,
            )
            .into_boxed_slice(),
            head: r.method.eq_ignore_ascii_case("HEAD"),
        })
        .collect::<Vec<_>>()
        .into()
}

/// Checks the workload settings against the rest of the configuration.
pub fn validate(config: &LoadConfig, protocol: &dyn ProtocolUnit) -> Result<(), WorkloadError> {
    let bad = |m: &str| Err(WorkloadError::Invalid(m.into()));
    let w = &config.workload;
    protocol.check_workload(config)?;
    if w.script.is_some()
        && (!config.requests.is_empty() || w.data.is_some() || config.shape.replay_plan().is_some())
    {
        return bad("-s sends what the script's request() returns; it does not combine with --requests, --data or --replay");
    }
    if protocol.request_form() != RequestForm::Http {
        // Its requests are not HTTP's: the rest is about HTTP requests.
        return Ok(());
    }
    if !w.targets.is_empty() {
        if !config.is_open_loop() {
            return bad("request lines with their own \"url\" need an open loop (-R): each target's requests are the schedule's entries chosen for it");
        }
        if w.target_of.len() != config.requests.len() {
            return bad("the request set's targets and requests disagree");
        }
    }
    if let Some(plan) = config.shape.replay_plan() {
        if !config.requests.is_empty() || w.data.is_some() {
            return bad("--replay sends the trace's own requests; it does not combine with --requests or --data");
        }
        if config.duration_ns > plan.duration_ns() {
            return bad("with --replay, -d may only cut the trace short");
        }
        if config.warmup_ns > 0 {
            return bad(
                "--warmup does not combine with --replay: a trace has no steady rate to warm up at",
            );
        }
    }
    compile_requests(config, &|i| protocol.body_form(i))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Target;
    use candor_workload::data::DataOrder;
    use candor_workload::runtime::RequestMaker;
    use candor_workload::{data::DataTable, pick::Picker, template};

    fn config(url: &str) -> LoadConfig {
        LoadConfig::new(Target::parse(url).unwrap())
    }

    #[test]
    fn the_url_path_headers_and_body_are_templates() {
        let mut c = config("http://127.0.0.1:1/u/{{seq}}?r={{random:1:1}}");
        c.headers = vec!["X-Id: {{seq}}".into()];
        c.body = b"n={{seq}}".to_vec();
        let compiled = compile_requests(&c, &|_| BodyForm::Template).unwrap();
        assert!(compiled.templated);
        let mut buffers = template::FillBuffers::for_templates(&compiled.templates);
        let mut rng = template::request_rng(1, 7);
        let mut fill = template::Fill {
            seq: 7,
            row: 0,
            rng: &mut rng,
            data: None,
        };
        assert_eq!(
            compiled.templates[0].fill(&mut fill, &mut buffers).unwrap(),
            format!(
                "GET /u/7?r=1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n{}X-Id: 7\r\nContent-Length: 3\r\n\r\nn=7",
                candor_wire::request_form::USER_AGENT_LINE
            )
            .as_bytes()
        );
        assert_eq!(compiled.names, vec!["GET /u/{{seq}}?r={{random:1:1}}"]);
    }

    #[test]
    fn names_merge_weights_pick_and_lines_carry_checks() {
        let mut c = config("http://127.0.0.1:1/");
        let lines = candor_wire::requests::parse_request_lines(
            "{\"path\": \"/a\", \"name\": \"x\", \"weight\": 2, \"check_body\": \"ok\"}\n{\"path\": \"/b\", \"name\": \"x\"}\n{\"path\": \"/c\", \"check_status\": \"404\"}",
        )
        .unwrap();
        c.requests = lines.iter().map(|l| l.spec.clone()).collect();
        c.workload.lines = lines;
        let compiled = compile_requests(&c, &|_| BodyForm::Template).unwrap();
        assert_eq!(compiled.names, vec!["x", "GET /c"]);
        assert_eq!(compiled.name_of, vec![0, 0, 1]);
        assert!(matches!(compiled.picker, Picker::Weighted { .. }));
        assert!(compiled.checks[0].body.is_some() && compiled.checks[1].body.is_none());
        assert!(compiled.accept[2].accepts(404) && !compiled.accept[0].accepts(404));
        assert!(!compiled.templated);
    }

    #[test]
    fn lines_with_their_own_url_resolve_to_targets_and_need_an_open_loop() {
        let mut c = config("http://127.0.0.1:1/");
        let lines = candor_wire::requests::parse_request_lines(
            "{\"path\": \"/a\"}\n{\"url\": \"http://127.0.0.1:2/b\"}\n{\"url\": \"http://127.0.0.1:1/c\"}\n{\"url\": \"http://127.0.0.1:2/d\"}",
        )
        .unwrap();
        c.requests = lines.iter().map(|l| l.spec.clone()).collect();
        c.workload.lines = lines;
        c.resolve_request_targets().unwrap();
        // The command line's own host and port is that target; the other one is one target.
        assert_eq!(c.workload.target_of, vec![0, 1, 0, 1]);
        assert_eq!(c.workload.targets.len(), 1);
        assert_eq!(c.workload.targets[0].host_header, "127.0.0.1:2");
        assert!(c.validate(&*crate::seam::unit::testing::in_order()).is_ok());
        let compiled = compile_requests(&c, &|_| BodyForm::Template).unwrap();
        assert!(needs_maker(&c, &compiled));
        // The command line's credentials go to its own host's lines only.
        let mut with_user = c.clone();
        with_user.target = Target::parse("http://u:p@127.0.0.1:1/").unwrap();
        with_user.apply_url_credentials();
        let auth: Vec<bool> = with_user
            .requests
            .iter()
            .map(|r| candor_wire::request_form::has_header(&r.headers, "authorization"))
            .collect();
        assert_eq!(auth, vec![true, false, true, false]);
        c.shape = crate::shape::LoadShape::ClosedLoop;
        assert!(validate(&c, &*crate::seam::unit::testing::in_order())
            .unwrap_err()
            .to_string()
            .contains("need an open loop"));
    }

    #[test]
    fn placeholder_errors_come_before_the_run() {
        let c = config("http://127.0.0.1:1/{{bogus}}");
        assert_eq!(
            validate(&c, &*crate::seam::unit::testing::in_order()).unwrap_err().to_string(),
            "the request (URL path, -H, --body): unknown placeholder '{{bogus}}' (known: seq, random:LO:HI, uuid, data:COLUMN)"
        );
        let mut c = config("http://127.0.0.1:1/");
        c.workload.data = Some(Arc::new(DataTable::parse(b"a\n1\n", "d.csv").unwrap()));
        assert!(validate(&c, &*crate::seam::unit::testing::in_order())
            .unwrap_err()
            .to_string()
            .contains("no {{data:COLUMN}} placeholder uses it"));
    }

    #[test]
    fn seq_decides_choice_and_values_whatever_the_slot_or_thread() {
        let mut c = LoadConfig::new(Target::parse("http://127.0.0.1:1/").unwrap());
        let lines = candor_wire::requests::parse_request_lines(
            "{\"path\": \"/a/{{seq}}/{{random:0:1000000}}\", \"weight\": 1}\n{\"path\": \"/b/{{uuid}}\", \"weight\": 3}",
        )
        .unwrap();
        c.requests = lines.iter().map(|l| l.spec.clone()).collect();
        c.workload.lines = lines;
        let compiled = Arc::new(compile_requests(&c, &|_| BodyForm::Template).unwrap());
        let mut one = RequestMaker::new(compiled.clone(), None, DataOrder::Sequential, 4, 2, 0);
        let mut other = RequestMaker::new(compiled, None, DataOrder::Sequential, 4, 8, 0);
        let mut seen = std::collections::HashSet::new();
        for seq in 0..2000u64 {
            let r = one.choose(seq);
            assert_eq!(r, other.choose(seq));
            one.fill((seq % 2) as usize, r, seq).unwrap();
            other.fill(7, r, seq).unwrap();
            assert_eq!(one.bytes((seq % 2) as usize), other.bytes(7));
            assert!(
                seen.insert(one.bytes((seq % 2) as usize).to_vec()),
                "{seq}: a repeat"
            );
        }
        let a = (0..2000u64).filter(|&s| one.choose(s) == 0).count();
        // Weight 1 of 4: 500 expected, binomial sd ≈ 19; 5 sd.
        assert!((a as i64 - 500).abs() < 97, "{a}");
    }
}
