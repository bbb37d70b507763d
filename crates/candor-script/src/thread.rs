//! One load thread's script state: `request()`, `response()`, `delay()`, each call timed.

use crate::error::{lua_type, one_line, ScriptError, ScriptPhase};
use crate::handle::ThreadShared;
use crate::lua_heap::LuaHeap;
use crate::lua_state::{runtime_error, take_output, StateData, Stops};
use candor_core::clock::now_ns;
use mlua::{Function, Lua, Table, Value};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A `by_request` label the script gave with `wrk.name`; [`ThreadScript::name`] spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NameId(u32);

impl NameId {
    /// Its place among the state's names, numbered from 0 as first seen.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What [`ThreadScript::next_request`] appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestInfo {
    /// How many HTTP requests the bytes hold (more than one when the script pipelines).
    pub requests: usize,
    /// The label `wrk.name` held after `request()` returned, if any.
    pub name: Option<NameId>,
}

/// How the script judged a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseVerdict {
    Ok,
    /// `response()` returned `false` or called `wrk.fail(reason)`: a failure of class `check`.
    Fail(String),
}

/// The reason a response is failed when `response()` returns `false`.
pub const RETURNED_FALSE: &str = "response() returned false";

/// Most header lines one request may carry when its pipelined requests are counted.
const MAX_HEADERS: usize = 128;

/// A load thread's own Lua state. Move it into the thread; it is not shared.
pub struct ThreadScript {
    lua: Lua,
    wrk: Table,
    /// The script's `request()`; `None` when it has none and `fixed` is sent every time.
    request: Option<Function>,
    fixed: Vec<u8>,
    fixed_info: RequestInfo,
    /// The string request() returned last, kept alive so that its address identifies it (Lua
    /// interns strings: the same bytes are the same object), with its bytes and request count.
    last: Option<mlua::LuaString>,
    last_bytes: Vec<u8>,
    last_requests: usize,
    /// Where each request of `last_bytes` ends, and the same for `fixed`.
    last_ends: Vec<usize>,
    fixed_ends: Vec<usize>,
    /// Whether the last [`ThreadScript::next_request`] sent `fixed`.
    sent_fixed: bool,
    /// The `wrk.name` string seen last and its id, kept for the same reason as `last`.
    last_name: Option<(mlua::LuaString, NameId)>,
    /// The key `"name"`, made once: looking `wrk.name` up with a string pushed per call would
    /// intern it again every time.
    name_key: mlua::LuaString,
    response: Option<Function>,
    delay: Option<Function>,
    /// The last `delay()`'s value when it was negative or NaN (see [`ThreadScript::odd_delay`]).
    odd_delay: Option<f64>,
    /// What the last `delay()` returned, as a number of milliseconds (see
    /// [`ThreadScript::returned_delay`]).
    returned_delay: f64,
    shared: Arc<ThreadShared>,
    interrupt: Arc<Stops>,
    names: Vec<Box<str>>,
    last_lua_ns: u64,
    total_lua_ns: u64,
    /// The state's allocator once this script is made (put back before the state closes).
    heap: Box<LuaHeap>,
}

impl Drop for ThreadScript {
    fn drop(&mut self) {
        self.heap.uninstall(&self.lua);
    }
}

impl ThreadScript {
    pub(crate) fn new(
        lua: Lua,
        shared: Arc<ThreadShared>,
        interrupt: Arc<Stops>,
    ) -> Result<ThreadScript, ScriptError> {
        let lua_err = |e: mlua::Error| ScriptError::Lua(one_line(&e));
        let globals = lua.globals();
        let function = |name: &str| -> Result<Option<Function>, ScriptError> {
            match globals.get::<Value>(name).map_err(lua_err)? {
                Value::Function(f) => Ok(Some(f)),
                _ => Ok(None),
            }
        };
        let request = function("request")?;
        let response = function("response")?;
        let delay = function("delay")?;
        let wrk: Table = globals.get("wrk").map_err(lua_err)?;
        let name_key = lua.create_string("name").map_err(lua_err)?;
        let mut script = ThreadScript {
            lua,
            wrk,
            request,
            fixed: Vec::new(),
            fixed_info: RequestInfo {
                requests: 0,
                name: None,
            },
            last: None,
            last_bytes: Vec::new(),
            last_requests: 0,
            last_ends: Vec::new(),
            fixed_ends: Vec::new(),
            sent_fixed: false,
            last_name: None,
            name_key,
            response,
            delay,
            odd_delay: None,
            returned_delay: 0.0,
            shared,
            names: Vec::new(),
            last_lua_ns: 0,
            total_lua_ns: 0,
            heap: LuaHeap::new(interrupt.heap_limit),
            interrupt,
        };
        if script.request.is_none() {
            // As wrk: without request(), the request built once after init() is sent each time.
            let built: Function = script.wrk.get("request").map_err(lua_err)?;
            let mut fixed = Vec::new();
            let info = script.call_request(&built, &mut fixed)?;
            script.fixed = fixed;
            script.fixed_info = info;
            script.fixed_ends = std::mem::take(&mut script.last_ends);
        }
        script.heap.install(&script.lua).map_err(lua_err)?;
        Ok(script)
    }

    /// Appends the next request(s) to `out` (the caller's buffer, reused: nothing is allocated
    /// on the Rust side once `out` has grown) and says how many requests they hold.
    pub fn next_request(&mut self, out: &mut Vec<u8>) -> Result<RequestInfo, ScriptError> {
        // Taken out for the call (call_request borrows self mutably); cloning the handle instead
        // would allocate.
        match self.request.take() {
            Some(f) => {
                self.sent_fixed = false;
                let result = self.call_request(&f, out);
                self.request = Some(f);
                result
            }
            None => {
                self.sent_fixed = true;
                self.last_lua_ns = 0;
                out.extend_from_slice(&self.fixed);
                Ok(self.fixed_info)
            }
        }
    }

    fn call_request(
        &mut self,
        f: &Function,
        out: &mut Vec<u8>,
    ) -> Result<RequestInfo, ScriptError> {
        let start = now_ns();
        let result = self.interrupt.after(&self.lua, f.call::<Value>(()));
        let name = match &result {
            Ok(_) => self.wrk.raw_get::<Value>(&self.name_key).ok(),
            Err(_) => None,
        };
        self.account(start);
        let s = match result {
            Ok(Value::String(s)) => s,
            Ok(other) => {
                return Err(ScriptError::NotAString {
                    type_name: lua_type(&other),
                })
            }
            Err(e) => return Err(runtime_error(&self.interrupt, ScriptPhase::Request, &e)),
        };
        let same = matches!(&self.last, Some(last) if last.to_pointer() == s.to_pointer());
        if !same {
            // A string returned again is copied from last_bytes instead, without counting its
            // requests again.
            self.last_bytes.clear();
            self.last = None;
            let len = copy_bytes(&self.lua, &s, &mut self.last_bytes)
                .map_err(|e| ScriptError::Lua(one_line(&e)))?;
            if len > MAX_REQUEST_BYTES {
                return Err(ScriptError::InvalidRequest {
                    reason: format!(
                        "{len} bytes, more than {}, the most one call may return (as --body-file)",
                        candor_core::bounded::format_limit(MAX_REQUEST_BYTES as u64)
                    ),
                });
            }
            request_ends(&self.last_bytes, &mut self.last_ends)?;
            self.last_requests = self.last_ends.len();
            self.last = Some(s);
        }
        out.extend_from_slice(&self.last_bytes);
        let requests = self.last_requests;
        let name = match name {
            Some(Value::String(s)) => Some(self.name_id(s)),
            _ => None,
        };
        Ok(RequestInfo { requests, name })
    }

    /// Calls `response(status, headers, body)` when the script defines it (see
    /// [`ThreadScript::wants_response`]); without it every response is [`ResponseVerdict::Ok`].
    pub fn response<'h>(
        &mut self,
        status: u16,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        body: &[u8],
    ) -> Result<ResponseVerdict, ScriptError> {
        let Some(f) = &self.response else {
            return Ok(ResponseVerdict::Ok);
        };
        let start = now_ns();
        if let Some(mut data) = self.lua.app_data_mut::<StateData>() {
            data.failure = None;
        }
        let call = || -> mlua::Result<Value> {
            // The headers table and the body are made in one protected call: under the heap
            // limit mlua protects each of its own allocations separately, which made a
            // response() with six headers four times slower (5.7 against 1.4 us).
            // SAFETY: exec_raw runs the closure under lua_pcall on the state's own thread; it
            // only pushes (a table, strings) and sets the table's fields, leaving the table and
            // the body on the stack as the two results.
            let (table, body) = unsafe {
                self.lua.exec_raw::<(Table, mlua::LuaString)>((), |state| {
                    mlua::ffi::lua_createtable(state, 0, 0);
                    for (name, value) in headers {
                        mlua::ffi::lua_pushlstring(state, name.as_ptr().cast(), name.len());
                        mlua::ffi::lua_pushlstring(state, value.as_ptr().cast(), value.len());
                        mlua::ffi::lua_rawset(state, -3);
                    }
                    mlua::ffi::lua_pushlstring(state, body.as_ptr().cast(), body.len());
                })?
            };
            f.call::<Value>((status, table, body))
        };
        let result = self.interrupt.after(&self.lua, call());
        self.account(start);
        let returned =
            result.map_err(|e| runtime_error(&self.interrupt, ScriptPhase::Response, &e))?;
        let failure = self
            .lua
            .app_data_mut::<StateData>()
            .and_then(|mut d| d.failure.take());
        Ok(match (failure, returned) {
            (Some(reason), _) => ResponseVerdict::Fail(reason),
            (None, Value::Boolean(false)) => ResponseVerdict::Fail(RETURNED_FALSE.to_string()),
            _ => ResponseVerdict::Ok,
        })
    }

    /// Milliseconds the script's `delay()` asks to wait before the next request (closed loop
    /// only), or `None` when it defines none.
    pub fn delay_ms(&mut self) -> Result<Option<u64>, ScriptError> {
        let Some(f) = &self.delay else {
            return Ok(None);
        };
        let start = now_ns();
        let result = self.interrupt.after(&self.lua, f.call::<Value>(()));
        self.account(start);
        self.odd_delay = None;
        match result.map_err(|e| runtime_error(&self.interrupt, ScriptPhase::Delay, &e))? {
            Value::Integer(i) => {
                self.returned_delay = i as f64;
                if i < 0 {
                    self.odd_delay = Some(i as f64);
                }
                Ok(Some(i.max(0) as u64))
            }
            Value::Number(n) => {
                self.returned_delay = n;
                // No wait for what is not a wait: the engine says so once (odd_delay).
                if n.is_nan() || n < 0.0 {
                    self.odd_delay = Some(n);
                }
                // `as` saturates: +inf and anything past u64 are u64::MAX ms, which the run
                // bounds by its own length (and says so).
                Ok(Some(if n > 0.0 { n as u64 } else { 0 }))
            }
            other => Err(ScriptError::DelayNotANumber {
                type_name: lua_type(&other),
            }),
        }
    }

    /// What the last [`ThreadScript::delay_ms`] call's `delay()` returned when it was negative or
    /// NaN, which is taken as no wait (0 ms); `None` for any other value.
    pub fn odd_delay(&self) -> Option<f64> {
        self.odd_delay
    }

    /// What the last [`ThreadScript::delay_ms`] call's `delay()` returned, as a number (0 before
    /// the first call): how a wait longer than the run is told, `inf` included.
    pub fn returned_delay(&self) -> f64 {
        self.returned_delay
    }

    /// Where each request of the bytes the last [`ThreadScript::next_request`] appended ends
    /// (offsets from the first of them): one entry per pipelined request.
    pub fn request_ends(&self) -> &[usize] {
        if self.sent_fixed {
            &self.fixed_ends
        } else {
            &self.last_ends
        }
    }

    /// Whether the script defines `response()`: only then must the engine parse and pass
    /// headers and body, as wrk.
    pub fn wants_response(&self) -> bool {
        self.response.is_some()
    }

    /// Whether the script defines `delay()`.
    pub fn has_delay(&self) -> bool {
        self.delay.is_some()
    }

    /// Whether the script defines `request()` (otherwise the same bytes are sent every time).
    pub fn is_dynamic(&self) -> bool {
        self.request.is_some()
    }

    /// Set once the script called `thread:stop()` (from this state or the setup state).
    pub fn stop_requested(&self) -> bool {
        self.shared.stop.load(Ordering::Relaxed)
    }

    /// The address the thread should connect to: `thread.addr` as `setup` left it, or `None`
    /// for the run's own target.
    pub fn addr(&self) -> Option<SocketAddr> {
        *self.shared.addr.lock().expect("addr lock")
    }

    /// Where the thread's connections go when the script assigned `thread.addr` (in `setup`
    /// or `init`); `None` when it never did: the run connects to its target as usual.
    pub fn redirect(&self) -> Option<SocketAddr> {
        if self.shared.addr_set.load(Ordering::Relaxed) {
            self.addr()
        } else {
            None
        }
    }

    /// The label behind a [`NameId`] this script returned.
    pub fn name(&self, id: NameId) -> &str {
        &self.names[id.0 as usize]
    }

    /// Nanoseconds (monotonic clock) the last `request()`/`response()`/`delay()` call spent in Lua.
    pub fn last_lua_ns(&self) -> u64 {
        self.last_lua_ns
    }

    /// Nanoseconds spent in Lua by this thread's calls so far.
    pub fn total_lua_ns(&self) -> u64 {
        self.total_lua_ns
    }

    /// Moves what this state printed into `out`.
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        take_output(&self.lua, out);
    }

    fn account(&mut self, start: u64) {
        let spent = now_ns().saturating_sub(start);
        self.last_lua_ns = spent;
        self.total_lua_ns += spent;
    }

    /// The id of the label `s`, without allocating when it is the label seen last.
    fn name_id(&mut self, s: mlua::LuaString) -> NameId {
        if let Some((last, id)) = &self.last_name {
            if last.to_pointer() == s.to_pointer() {
                return *id;
            }
        }
        let id = self.intern(&s.as_bytes());
        self.last_name = Some((s, id));
        id
    }

    /// Labels are few and repeat: a linear scan finds them without allocating.
    fn intern(&mut self, name: &[u8]) -> NameId {
        if let Some(i) = self.names.iter().position(|n| n.as_bytes() == name) {
            return NameId(i as u32);
        }
        self.names
            .push(String::from_utf8_lossy(name).into_owned().into_boxed_str());
        NameId((self.names.len() - 1) as u32)
    }
}

/// The most bytes one `request()` call may return: what `--body-file` allows one body (each copy
/// of a larger string, kept and sent, would cost its size again).
const MAX_REQUEST_BYTES: usize = candor_core::bounded::MAX_BODY_FILE_BYTES as usize;

/// Appends the bytes of `s` to `out` and returns their length; nothing is copied when they are
/// more than [`MAX_REQUEST_BYTES`]. mlua's `as_bytes` shares the string's handle, which
/// allocates a reference count the first time; reading the string on the stack does not.
fn copy_bytes(lua: &Lua, s: &mlua::LuaString, out: &mut Vec<u8>) -> mlua::Result<usize> {
    let mut len = 0;
    // SAFETY: exec_raw pushes `s` and runs the closure on the state's own thread; the bytes
    // are read while the string is on the stack, so alive.
    unsafe {
        lua.exec_raw::<()>(s, |state| {
            let bytes = mlua::ffi::lua_tolstring(state, -1, &mut len);
            if len <= MAX_REQUEST_BYTES {
                out.extend_from_slice(std::slice::from_raw_parts(bytes.cast::<u8>(), len));
            }
        })?;
    }
    Ok(len)
}

/// How many complete HTTP/1.1 requests `bytes` holds, one after another; an error when they do
/// not parse, end half way, or use a framing candor does not send (chunked request bodies).
pub fn count_requests(bytes: &[u8]) -> Result<usize, ScriptError> {
    let mut ends = Vec::new();
    request_ends(bytes, &mut ends)?;
    Ok(ends.len())
}

/// Fills `ends` with the offset where each complete HTTP/1.1 request of `bytes` ends (see
/// [`count_requests`]); `ends` is cleared first and reused, so nothing is allocated once it has
/// grown.
pub fn request_ends(bytes: &[u8], ends: &mut Vec<usize>) -> Result<(), ScriptError> {
    ends.clear();
    let invalid = |reason: String| ScriptError::InvalidRequest { reason };
    if bytes.is_empty() {
        return Err(invalid("an empty string".to_string()));
    }
    let mut at = 0;
    let mut count = 0;
    while at < bytes.len() {
        // Uninitialised: zeroing 128 headers cost more than parsing a small request.
        let mut headers =
            [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut []);
        let head = match req.parse_with_uninit_headers(&bytes[at..], &mut headers) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                return Err(invalid(format!(
                    "request {} ends before its header block does (byte {at})",
                    count + 1
                )))
            }
            Err(e) => return Err(invalid(format!("request {}: {e} (byte {at})", count + 1))),
        };
        if let Some(i) = lone_line_break(&bytes[at..at + head]) {
            // httparse reads a bare LF as a line's end; servers differ on it, so such a head
            // is not one request to every reader of the wire.
            return Err(invalid(format!(
                "request {}: a CR or LF that is not part of a CRLF line end (byte {})",
                count + 1,
                at + i
            )));
        }
        let mut body = 0usize;
        for h in req.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                body = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .ok_or_else(|| {
                        invalid(format!(
                            "request {}: a Content-Length that is not a number",
                            count + 1
                        ))
                    })?;
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(invalid(format!(
                    "request {}: Transfer-Encoding bodies are not supported (send Content-Length)",
                    count + 1
                )));
            }
        }
        at += head;
        if bytes.len() - at < body {
            return Err(invalid(format!(
                "request {}: the body is shorter than its Content-Length of {body}",
                count + 1
            )));
        }
        at += body;
        count += 1;
        ends.push(at);
    }
    Ok(())
}

/// The place of the first CR not followed by LF, or LF not preceded by CR, in a request's head.
fn lone_line_break(head: &[u8]) -> Option<usize> {
    head.iter().enumerate().position(|(i, &b)| match b {
        b'\n' => i == 0 || head[i - 1] != b'\r',
        b'\r' => head.get(i + 1) != Some(&b'\n'),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_must_end_its_lines_with_crlf() {
        // A bare LF inside a value: httparse takes it as a line end, a second header.
        let lf = b"GET / HTTP/1.1\r\nX-A: a\nX-Injected: 1\r\n\r\n";
        let err = count_requests(lf).unwrap_err().to_string();
        assert!(
            err.contains("not part of a CRLF line end (byte 22)"),
            "{err}"
        );
        let bare_end = b"GET / HTTP/1.1\nHost: a\n\n";
        assert!(count_requests(bare_end).is_err());
        // A body may hold any bytes.
        let body = b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\na\nb";
        assert_eq!(count_requests(body).unwrap(), 1);
    }

    #[test]
    fn pipelined_requests_are_counted_with_their_bodies() {
        let one = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(count_requests(one).unwrap(), 1);
        let post = b"POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nGET /\r\nGET / HTTP/1.1\r\n\r\n";
        assert_eq!(count_requests(post).unwrap(), 2);
        let three = [&one[..], one, one].concat();
        assert_eq!(count_requests(&three).unwrap(), 3);
        assert!(count_requests(b"").is_err());
        assert!(count_requests(b"GET / HTTP/1.1\r\nHost: a\r\n").is_err());
        assert!(count_requests(b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\nabc").is_err());
        assert!(count_requests(b"not http at all\r\n\r\n").is_err());
    }
}
