//! What a gRPC run adds to HTTP/2's: its calls, each made as an HTTP request before the run
//! (POST to the method's path, gRPC's headers, the framed message as the body), and which
//! `grpc-status` codes count as success.

use candor_engine::seam::unit::BodyForm;

/// What a gRPC run adds to HTTP/2's: each request is made as HTTP's (`method` POST, its path
/// the method's path, `headers` gRPC's and the metadata, its body the framed message, encoded
/// once before the run), so only the judging of the answer differs.
#[derive(Debug, Clone)]
pub struct GrpcConfig {
    /// The calls as given, `package.Service/Method` (comma-separated when `--requests` lines
    /// name several).
    pub call: String,
    /// The `grpc-status` codes that count as success (`--check-status`; by default `OK`).
    pub accept: candor_grpc::CodeSet,
    /// Per request (the one request, or each `--requests` line in order), its call.
    pub calls: Vec<GrpcCall>,
}

/// One request's gRPC call.
#[derive(Debug, Clone)]
pub struct GrpcCall {
    /// Unary or server-streaming.
    pub kind: candor_grpc::CallKind,
    /// A message with placeholders: the request's body is then its JSON template, filled per
    /// request and encoded by this (allocating: docs/grpc.md); `None` for a message encoded once.
    pub templated: Option<candor_grpc::RequestEncoder>,
}

impl GrpcConfig {
    /// Whether request `index`'s message is a template, encoded per request.
    pub fn is_templated(&self, index: usize) -> bool {
        self.calls.get(index).is_some_and(|c| c.templated.is_some())
    }

    /// How request `index`'s body is compiled: a message encoded once is bytes, a templated
    /// one is JSON (values filled into its strings are escaped).
    pub fn body_form(&self, index: usize) -> BodyForm {
        if self.is_templated(index) {
            BodyForm::JsonTemplate
        } else {
            BodyForm::Bytes
        }
    }
}
