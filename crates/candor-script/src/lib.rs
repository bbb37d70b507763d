//! wrk-compatible Lua scripting for candor: a script's setup state ([`ScriptHost`]) and one
//! LuaJIT state per load thread ([`ThreadScript`]), with wrk's whole `wrk` API. The engine asks
//! a [`ThreadScript`] for the bytes to send and shows it each response; see docs/scripts.md.

mod addr;
mod error;
mod format;
mod handle;
mod host;
mod lua_heap;
mod lua_state;
mod stats;
mod thread;

pub use addr::Addr;
pub use error::{ScriptError, ScriptPhase};
pub use host::{InterruptHandle, RunSummary, ScriptHost, WrkErrorCounts};
pub use lua_state::{ScriptOptions, ScriptTarget};
pub use stats::Stats;
pub use thread::{
    count_requests, request_ends, NameId, RequestInfo, ResponseVerdict, ThreadScript,
    RETURNED_FALSE,
};

// The engine moves each ThreadScript into its load thread.
const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<ThreadScript>();
    assert_send::<ScriptHost>();
};
