//! An `--llm` run's model when `--model` is not given: the first model the server lists
//! (`GET /v1/models`, probed before the load), as vLLM's `bench serve` and guidellm take it, so
//! that the default run of an ordinary server is not refused for naming a model it lacks.

use candor_core::results::{LlmBackend, ModelSource, PLACEHOLDER_MODEL};
use candor_load::RunPlan;

/// `config` with its requests naming the first model `backend` lists, when its model is the
/// placeholder of a run without `--model` and the server listed one; `None` otherwise.
pub(crate) fn named_by_server(config: &RunPlan, backend: &LlmBackend) -> Option<RunPlan> {
    let settings = config.llm_settings.as_ref()?;
    if settings.model_from != ModelSource::Placeholder {
        return None;
    }
    let first = &backend.models.first()?.id;
    let mut named = config.clone();
    for r in &mut named.requests {
        if let Some(body) =
            candor_load::workload::prompts::rename_model(&r.body, PLACEHOLDER_MODEL, first)
        {
            r.body = body;
        }
    }
    let s = named.llm_settings.as_mut().expect("checked above");
    s.model = first.clone();
    s.model_from = ModelSource::Server;
    Some(named)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candor_core::results::{BackendModel, LlmSettings};
    use candor_load::RequestSpec;
    use candor_load::Target;

    fn plan(model_from: ModelSource) -> RunPlan {
        let mut p = RunPlan::new(
            Target::parse("http://127.0.0.1:1/").unwrap(),
            Default::default(),
        )
        .unwrap();
        p.requests = vec![
            RequestSpec {
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                headers: vec![],
                body: br#"{"model":"default","prompt":"a"}"#.to_vec(),
            },
            RequestSpec {
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                headers: vec![],
                body: br#"{"model":"own","prompt":"b"}"#.to_vec(),
            },
        ];
        p.llm_settings = Some(LlmSettings {
            model: PLACEHOLDER_MODEL.into(),
            model_from,
            ..Default::default()
        });
        p
    }

    fn listing(ids: &[&str]) -> LlmBackend {
        LlmBackend {
            models: ids
                .iter()
                .map(|id| BackendModel {
                    id: id.to_string(),
                    owned_by: Some("vllm".into()),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn without_model_the_first_listed_is_sent_and_a_lines_own_kept() {
        let named =
            named_by_server(&plan(ModelSource::Placeholder), &listing(&["m1", "m2"])).unwrap();
        assert!(String::from_utf8_lossy(&named.requests[0].body).contains(r#""model":"m1""#));
        assert!(String::from_utf8_lossy(&named.requests[1].body).contains(r#""model":"own""#));
        let s = named.llm_settings.as_ref().unwrap();
        assert_eq!(
            (s.model.as_str(), s.model_from),
            ("m1", ModelSource::Server)
        );
    }

    #[test]
    fn a_given_model_or_an_empty_list_changes_nothing() {
        assert!(named_by_server(&plan(ModelSource::Flag), &listing(&["m1"])).is_none());
        assert!(named_by_server(&plan(ModelSource::Placeholder), &listing(&[])).is_none());
    }
}
