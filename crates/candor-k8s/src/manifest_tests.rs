use super::*;
use candor_report::pod_log::LOG_JSON_BEGIN;

const AT: &str = "2026-11-22T01:00:00Z";

/// The spec of `candor k8s --shards N --image IMAGE -- RUN...` with every other flag at its default.
fn spec(shards: u32, image: &str, run: &[&str]) -> JobSpec {
    JobSpec {
        shards,
        image: image.into(),
        name: "candor-load".into(),
        namespace: "default".into(),
        start_at: AT.into(),
        cpu: "2".into(),
        memory: "512Mi".into(),
        guaranteed: false,
        pvc: None,
        binary: "candor".into(),
        no_shell: false,
        live_port: None,
        run: run.iter().map(|s| s.to_string()).collect(),
    }
}

fn example() -> JobSpec {
    JobSpec {
        pvc: Some("candor-results".into()),
        ..spec(
            4,
            "ghcr.io/x/candor:0.1",
            &["-R", "40k", "-c", "64", "-d", "60s", "http://svc:8080/"],
        )
    }
}

fn json(spec: &JobSpec) -> serde_json::Value {
    serde_json::to_value(job(spec).unwrap()).unwrap()
}

fn strings(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[test]
fn indexed_job_with_one_pod_per_shard_and_no_retries() {
    let j = json(&example());
    assert_eq!(j["apiVersion"], "batch/v1");
    assert_eq!(j["kind"], "Job");
    let spec = &j["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 4);
    assert_eq!(spec["parallelism"], 4);
    assert_eq!(spec["backoffLimit"], 0);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "ghcr.io/x/candor:0.1");
    let env = &c["env"][0];
    assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(
        env["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    assert!(env.get("value").is_none());
    assert_eq!(
        c["env"][1]["value"],
        "/results/shard-$(JOB_COMPLETION_INDEX).json"
    );
    assert_eq!(
        strings(&c["args"]),
        [
            "candor",
            "run",
            "--shard",
            "$(JOB_COMPLETION_INDEX)/4",
            "--start-at",
            AT,
            "--json",
            "$(CANDOR_RESULTS)",
            "-R",
            "40k",
            "-c",
            "64",
            "-d",
            "60s",
            "http://svc:8080/"
        ]
    );
    assert_eq!(c["command"][0], "/bin/sh");
    assert_eq!(c["command"][3], "candor-shard");
    let script = c["command"][2].as_str().unwrap();
    assert!(script.starts_with("\"$@\"\nrc=$?"), "{script}");
    assert!(
        script.contains(LOG_JSON_BEGIN) && script.contains("exit $rc"),
        "{script}"
    );
    assert_eq!(c["resources"]["requests"]["cpu"], "2");
    assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
    assert!(c["resources"]["limits"].get("cpu").is_none());
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/results");
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "candor-results"
    );
    assert!(pod["volumes"][0].get("emptyDir").is_none());
    assert_eq!(j["metadata"]["annotations"]["candor/start-at"], AT);
    assert_eq!(j["metadata"]["annotations"]["candor/shards"], "4");
    assert_eq!(
        pod["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]
            ["app.kubernetes.io/instance"],
        "candor-load"
    );
}

#[test]
fn live_port_serves_metrics_and_asks_to_be_scraped() {
    let live = JobSpec {
        live_port: Some(9464),
        ..spec(2, "i:1", &["-R", "2k", "http://svc/"])
    };
    let j = json(&live);
    let t = &j["spec"]["template"];
    let ann = &t["metadata"]["annotations"];
    assert_eq!(ann["prometheus.io/scrape"], "true");
    assert_eq!(ann["prometheus.io/port"], "9464");
    assert_eq!(ann["prometheus.io/path"], "/metrics");
    let c = &t["spec"]["containers"][0];
    assert_eq!(c["ports"][0]["containerPort"], 9464);
    let a = strings(&c["args"]);
    let i = a.iter().position(|x| *x == "--live").unwrap();
    assert_eq!(a[i + 1], "0.0.0.0:9464");
    assert_eq!(a[i + 2..i + 4], ["--live-linger", LIVE_LINGER]);
    // Without it: no port, no annotations.
    let j = json(&example());
    assert!(j["spec"]["template"]["metadata"]
        .get("annotations")
        .is_none());
    assert!(j["spec"]["template"]["spec"]["containers"][0]
        .get("ports")
        .is_none());
}

#[test]
fn options_shape_the_pod() {
    let a = JobSpec {
        name: "checkout-load".into(),
        namespace: "perf".into(),
        cpu: "1500m".into(),
        memory: "1Gi".into(),
        guaranteed: true,
        ..spec(2, "img:1", &["-R", "2k", "http://a/"])
    };
    let j = json(&a);
    assert_eq!(j["metadata"]["name"], "checkout-load");
    assert_eq!(j["metadata"]["namespace"], "perf");
    let c = &j["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["cpu"], "1500m");
    assert_eq!(c["resources"]["requests"]["memory"], "1Gi");
    // No claim: the results still exist in the pod (emptyDir) for the log copy.
    assert_eq!(
        j["spec"]["template"]["spec"]["volumes"][0]["emptyDir"],
        serde_json::json!({})
    );
    let a = JobSpec {
        pvc: Some("r".into()),
        no_shell: true,
        binary: "/usr/local/bin/candor".into(),
        ..spec(3, "img:1", &["http://a/"])
    };
    let j = json(&a);
    let c = &j["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["command"], serde_json::json!(["/usr/local/bin/candor"]));
    assert_eq!(c["args"][0], "run");
    assert_eq!(c["args"][2], "$(JOB_COMPLETION_INDEX)/3");
}

#[test]
fn user_text_cannot_break_out_of_yaml_or_kubernetes_expansion() {
    let a = spec(
        1,
        "img:1",
        &[
            "-H",
            "X-Note: a: b # c \"q\" $(HOME)",
            "--body",
            "yes\n- no",
            "--body",
            "3",
            "--body",
            "true",
            "http://a/",
        ],
    );
    let m = job(&a).unwrap();
    let j = serde_json::to_value(&m).unwrap();
    let args = strings(&j["spec"]["template"]["spec"]["containers"][0]["args"]);
    assert!(
        args.contains(&"X-Note: a: b # c \"q\" $$(HOME)"),
        "{args:?}"
    );
    // The YAML file is comment lines, then the JSON document: every string double-quoted.
    let yaml = m.to_yaml(&usage_comment(&a));
    let (comment, doc) = yaml.split_once("---\n").unwrap();
    assert!(comment.lines().all(|l| l.starts_with('#')), "{comment}");
    let back: serde_json::Value = serde_json::from_str(doc).unwrap();
    assert_eq!(back, j, "{yaml}");
    assert!(
        doc.contains(r#""yes\n- no""#) && doc.contains(r#""true""#) && doc.contains(r#""3""#),
        "{doc}"
    );
}

#[test]
fn bad_options_fail_with_one_clear_line() {
    let err = |s: JobSpec| job(&s).unwrap_err().to_string();
    let base = || spec(2, "img:1", &["http://a/"]);
    assert!(err(JobSpec {
        name: "Bad_Name".into(),
        ..base()
    })
    .contains("invalid --name 'Bad_Name'"));
    assert!(err(JobSpec {
        cpu: "two".into(),
        ..base()
    })
    .contains("invalid --cpu 'two'"));
    assert!(err(JobSpec {
        memory: "0".into(),
        ..base()
    })
    .contains("invalid --memory '0'"));
    assert!(err(JobSpec {
        no_shell: true,
        ..base()
    })
    .contains("give --pvc CLAIM"));
    assert!(err(JobSpec {
        image: "a b".into(),
        ..base()
    })
    .contains("invalid --image 'a b'"));
    assert!(err(JobSpec {
        pvc: Some("Bad".into()),
        ..base()
    })
    .contains("invalid --pvc 'Bad'"));
    assert!(err(JobSpec {
        shards: 0,
        ..base()
    })
    .contains("at least 1"));
    for q in ["500m", "2", "1.5", "512Mi", "1G"] {
        assert!(check_quantity("q", q).is_ok(), "{q}");
    }
    for q in ["", "m", "1.", ".5", "-1", "1 Gi", "0m", "5x"] {
        assert!(check_quantity("q", q).is_err(), "{q}");
    }
}

#[test]
fn start_instant_is_rounded_up_to_a_whole_second() {
    let t = UNIX_EPOCH + Duration::from_millis(1_795_000_000_250);
    assert_eq!(rfc3339_ceil(t), "2026-11-18T11:06:41Z");
    let t = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    assert_eq!(rfc3339_ceil(t), "2026-11-18T11:06:40Z");
}

#[test]
fn the_usage_comment_says_how_to_collect_the_results() {
    let c = usage_comment(&example());
    assert!(c.lines().all(|l| l.starts_with('#')), "{c}");
    assert!(
        c.contains("kubectl logs") && c.contains("claim candor-results"),
        "{c}"
    );
    let volume_only = JobSpec {
        no_shell: true,
        ..example()
    };
    assert!(!usage_comment(&volume_only).contains("kubectl logs"));
}

#[test]
fn push_flags_reach_every_pod_after_its_shard_and_common_start() {
    // Each pod pushes with its shard label; the common --start-at is the default run_id, so the
    // shards of one Job are one run in Prometheus.
    let s = spec(
        3,
        "img",
        &[
            "--out",
            "prometheus-rw=http://prom:9090/api/v1/write",
            "--tag",
            "team=pay",
            "-R",
            "3k",
            "http://svc/",
        ],
    );
    let j = json(&s);
    let args = strings(&j["spec"]["template"]["spec"]["containers"][0]["args"]);
    assert_eq!(
        args[2..6],
        ["--shard", "$(JOB_COMPLETION_INDEX)/3", "--start-at", AT]
    );
    assert_eq!(
        args[8..],
        [
            "--out",
            "prometheus-rw=http://prom:9090/api/v1/write",
            "--tag",
            "team=pay",
            "-R",
            "3k",
            "http://svc/"
        ]
    );
}
