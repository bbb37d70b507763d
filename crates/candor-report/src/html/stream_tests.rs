//! The streamed-responses parts of the page on an LLM run made here: the card leads with TTFT,
//! TPOT, ITL, goodput and tokens/s; zero-length gaps are counted, not drawn; the first event is
//! drawn beneath TTFT; TTFT over time, goodput and settings are on the page.

use super::{stream, write_html, HtmlOptions};
use crate::synthetic::synthetic_run;
use candor_core::phase_results::{Goodput, LlmTokens, NamedHistogram, StreamResults};
use candor_core::results::RunResults;
use candor_core::stream_measures::{IntervalStream, StreamMeasure};
use candor_core::{new_histogram, Summary};

/// An LLM run: TTFT = first event = the response times, ITL of 10 ms with `zero` gaps of
/// zero length (recorded at the floor, 1 ns), goodput and tokens.
fn llm_run(zero: u64) -> RunResults {
    let mut r = synthetic_run(5, 3, 100, 1_000_000, 0);
    r.command_line = "candor run http://127.0.0.1:1/ --llm openai --model tiny --output-tokens 20"
        .split(' ')
        .map(String::from)
        .collect();
    let rec = r.main.histograms.decode().unwrap();
    let mut itl = new_histogram();
    itl.record_n(10_000_000, 500).unwrap();
    if zero > 0 {
        itl.record_n(1, zero).unwrap();
    }
    for (m, h) in [
        (StreamMeasure::Ttft, &rec.response),
        (StreamMeasure::FirstEvent, &rec.response),
        (StreamMeasure::Itl, &itl),
        (StreamMeasure::Tpot, &itl),
    ] {
        r.extra.push(NamedHistogram::of(m.name(), h));
        r.main.set_stream_summary(m, Some(Summary::of(h)));
    }
    for iv in &mut r.intervals {
        let d = iv.histograms.decode().unwrap();
        iv.stream = Some(
            IntervalStream::of(
                iv.completed,
                iv.completed * 21,
                Some(iv.completed * 20),
                iv.length_s,
                [(StreamMeasure::Ttft, &d.response)],
            )
            .with_goodput(iv.completed / 2, iv.length_s),
        );
    }
    let n = r.main.requests.completed;
    r.main.stream = Some(StreamResults {
        responses: n,
        events: n * 21,
        events_per_response: 21.0,
        failures: Default::default(),
        llm: Some(LlmTokens {
            output_tokens: n * 20,
            output_tokens_per_s: 2000.0,
            counted_from_usage: n,
            counted_from_chunks: 0,
            ..Default::default()
        }),
        goodput: Some(Goodput::of("ttft<500ms".into(), n, n, n, 3.0)),
    });
    r
}

fn page(r: RunResults) -> String {
    write_html(&[("llm".into(), r)], &HtmlOptions::default()).unwrap()
}

#[test]
fn the_card_leads_with_ttft_tpot_itl_goodput_and_tokens_then_end_to_end() {
    let html = page(llm_run(0));
    let card = &html[html.find("<section class=\"cards\">").unwrap()..];
    let card = &card[..card.find("</section>").unwrap()];
    let at = |s: &str| card.find(s).unwrap_or_else(|| panic!("{s} in {card}"));
    assert!(at(">TTFT p50<") < at(">TPOT p99<"));
    assert!(at(">ITL p99<") < at(">goodput<"));
    assert!(at(">output tokens/s<") < at(">end to end p50<"));
    assert!(card.contains(">2000.0<"), "{card}");
    // A run without streams keeps its card as it was.
    let plain = write_html(
        &[("plain".into(), synthetic_run(5, 3, 100, 1_000_000, 0))],
        &HtmlOptions::default(),
    )
    .unwrap();
    assert!(!plain.contains("metrics lead") && plain.contains("<span class=\"k\">p50</span>"));
}

#[test]
fn zero_length_gaps_are_counted_not_drawn() {
    let r = llm_run(40);
    let data = stream::chart_data("llm", &r, &[1.0, 2.0, 10.0, 100.0, 1000.0])
        .unwrap()
        .unwrap();
    let itl = data["spectra"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "itl")
        .unwrap();
    assert_eq!(itl["zero"], 40);
    // Without the 40 gaps at 1 ns every drawn value is the 10 ms gap, the lowest included.
    let lowest = itl["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_u64())
        .min()
        .unwrap();
    assert!(lowest >= 9_990_000, "{lowest}");
    assert!(itl["legend"]
        .as_str()
        .unwrap()
        .ends_with("40 zero-length not drawn"));
    // TPOT is not a gap: its histogram (the same values here) is drawn whole.
    let tpot = data["spectra"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "tpot")
        .unwrap();
    assert_eq!(tpot["zero"], 0);
    assert_eq!(tpot["values"][0], 1);
    let html = page(r);
    assert!(
        html.contains("Not drawn in the spectra above: llm: 40 of 540 ITL gaps had zero length."),
        "note"
    );
    assert!(!page(llm_run(0)).contains("id=\"zero-gaps\""));
}

#[test]
fn first_event_is_drawn_first_beneath_ttft() {
    let data = stream::chart_data("llm", &llm_run(0), &[1.0, 10.0])
        .unwrap()
        .unwrap();
    let names: Vec<&str> = data["spectra"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first_event", "ttft", "itl", "tpot"]);
    assert_eq!(data["spectra"][0]["under"], true);
    assert_eq!(data["spectra"][1]["under"], false);
}

#[test]
fn ttft_over_time_goodput_and_settings_are_on_the_page() {
    let r = llm_run(0);
    let data = stream::chart_data("llm", &r, &[1.0]).unwrap().unwrap();
    let tt = &data["ttft_time"];
    assert_eq!(tt["t"].as_array().unwrap().len(), r.intervals.len());
    assert_eq!(tt["p99"].as_array().unwrap().len(), r.intervals.len());
    let html = page(r);
    assert!(html.contains("id=\"ttft-time-0\""));
    assert!(html.contains("<h3>Goodput</h3>"));
    assert!(
        html.contains("<td>ttft&lt;500ms</td>"),
        "goodput objectives"
    );
    assert!(html.contains("<h3>Settings</h3>"));
    assert!(html.contains("<td>model</td><td>tiny</td>"));
    assert!(html.contains("<td>output tokens (budget)</td><td>20</td>"));
    // Not given on the command line, so not shown.
    assert!(!html.contains("<td>tokenizer</td>"));
    assert!(
        !html.contains("<h3>Conversations</h3>"),
        "not a multi-turn run"
    );
}

#[test]
fn goodput_over_time_is_charted_beside_completions_only_when_judged() {
    let r = llm_run(0);
    let data = stream::chart_data("llm", &r, &[1.0]).unwrap().unwrap();
    let g = &data["goodput_time"];
    let n = r.intervals.len();
    assert!(n > 1);
    assert_eq!(g["t"].as_array().unwrap().len(), n);
    for (k, iv) in r.intervals.iter().enumerate() {
        let good = (iv.completed / 2) as f64 / iv.length_s;
        assert_eq!(g["good_per_s"][k].as_f64(), Some(good));
        assert_eq!(
            g["completed_per_s"][k].as_f64(),
            Some(iv.completed as f64 / iv.length_s)
        );
    }
    assert_eq!(
        g["mean_per_s"].as_f64(),
        Some(r.main.requests.completed as f64 / 3.0)
    );
    let html = page(r.clone());
    assert!(html.contains("id=\"goodput-time-0\""));
    assert!(html.find("id=\"ttft-time-0\"") < html.find("id=\"goodput-time-0\""));
    // A run without goodput bounds: no such chart, no such data.
    let mut plain = r;
    for iv in &mut plain.intervals {
        if let Some(s) = iv.stream.as_mut() {
            (s.good, s.good_per_s) = (None, None);
        }
    }
    let data = stream::chart_data("llm", &plain, &[1.0]).unwrap().unwrap();
    assert!(data.get("goodput_time").is_none());
    assert!(!page(plain).contains("id=\"goodput-time-0\""));
}

#[test]
fn a_multi_turn_runs_conversations_are_on_the_page() {
    let mut r = llm_run(0);
    r.main.conversations = Some(candor_core::results::Conversations {
        started: 10,
        completed: 7,
        cut: 2,
        unqueued: 0,
        past_end: 1,
        turns: 25,
    });
    // Without conversations per interval (results written before them), no such table.
    let html = page(r.clone());
    assert!(html.contains("<h3>Conversations</h3>"));
    assert!(html.contains("<td>10</td><td>7</td><td>2</td><td>0</td><td>1</td><td>2.50</td>"));
    assert!(!html.contains("Conversations per interval"));
    let c = |started, completed, cut| candor_core::results::Conversations {
        started,
        completed,
        cut,
        turns: started * 2,
        ..Default::default()
    };
    for (k, iv) in r.intervals.iter_mut().enumerate() {
        let k = k as u64;
        iv.stream = iv
            .stream
            .take()
            .map(|s| s.with_conversations(c(k + 3, k, 1)));
    }
    let html = page(r);
    assert!(html.contains("<summary>Conversations per interval</summary>"));
    assert!(
        html.contains("<td>1.0s</td><td>4</td><td>1</td><td>1</td><td>8</td>"),
        "the second interval's row"
    );
}

#[test]
fn cached_input_tokens_are_in_the_headline_card_when_the_server_said_them() {
    let mut r = llm_run(0);
    assert!(!page(r.clone()).contains("cached input tokens"));
    let t = r.main.stream.as_mut().unwrap().llm.as_mut().unwrap();
    (t.input_tokens, t.cached_tokens, t.cached_counted) = (4000, 1000, 10);
    let html = page(r);
    assert!(html.contains("cached input tokens"), "the card names them");
    assert!(html.contains("1,000 (25.0% of input)"), "with their share");
}
