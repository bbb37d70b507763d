//! gRPC for candor, everything that does not need the load engine: descriptors from `.proto`
//! files or a server's reflection service, `--call` resolved to a method, JSON request bodies
//! to framed protobuf, a sans-IO counter of response messages, status codes, `grpc-timeout`,
//! and the request headers of a call. With the `test-server` feature: a tonic server that
//! delays, stalls, fails and drops connections on command (`server`).

pub mod descriptors;
pub mod headers;
pub mod length_prefix;
pub mod message;
pub mod method;
#[cfg(feature = "reflection")]
pub mod reflect;
pub mod status;
pub mod timeout;

#[cfg(feature = "test-server")]
pub mod test_server;

pub use descriptors::{compile_protos, ProtoError};
pub use headers::{request_headers, CallScheme, HeaderField, Metadata, MetadataError};
pub use length_prefix::{MessageCounter, MessageStreamError};
pub use message::{MessageError, RequestEncoder, StaticMessage, TemplatedError, TemplatedMessage};
pub use method::{CallError, CallKind, CallName, GrpcMethod};
/// The descriptors calls are resolved against (from `.proto` files or reflection).
pub use prost_reflect::DescriptorPool;
pub use status::{decode_grpc_message, Code, CodeSet, CodeSetError, GrpcCodeCounts};
pub use timeout::GrpcTimeout;

/// The encoded `FileDescriptorSet` of the test server's `tests/proto/bench.proto` (compiled by
/// build.rs with protox), for its reflection service and for tests.
pub const BENCH_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/bench_descriptor.bin"));

/// The descriptors of `bench.proto`.
pub fn bench_descriptor_pool() -> prost_reflect::DescriptorPool {
    prost_reflect::DescriptorPool::decode(BENCH_DESCRIPTOR_SET)
        .expect("build.rs encoded a valid set")
}
