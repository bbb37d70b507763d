//! Building one Lua state the way wrk does: standard libraries, `require` beside the script,
//! the `wrk` module with the target's fields, captured output, the interrupt hook, the script.

use crate::addr::{self, Addr};
use crate::error::{one_line, ScriptError, ScriptPhase};
use mlua::{HookTriggers, Lua, LuaOptions, StdLib, Table, Value, Variadic, VmState};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

/// The `wrk` module's Lua half, loaded into every state.
const WRK_LUA: &str = include_str!("wrk.lua");

/// How many VM instructions run between two checks of the interrupt flag (interpreted code only:
/// LuaJIT never calls hooks from compiled traces, see docs/scripts.md).
const INTERRUPT_CHECK_EVERY: u32 = 1000;

/// Where Debian's Lua 5.1 modules are (`lua-*` packages), which Debian's wrk searches.
const DEBIAN_LUA_DIR: &str = "/usr/share/lua/5.1";

/// The message a hook raises when the run is interrupted.
pub(crate) const INTERRUPTED: &str = "interrupted";

/// The message `os.exit()` raises (and the hook raises again while the call unwinds, so that a
/// `pcall` around it cannot keep the script running).
pub(crate) const EXITING: &str = "os.exit() called";

/// The largest script file: a script is source text, and one read from `/dev/zero` or a pipe
/// that never ends must be refused before it fills memory (as every other input is capped).
pub const MAX_SCRIPT_FILE_BYTES: u64 = 16 << 20;

/// Each Lua state's heap limit unless [`ScriptOptions::heap_limit`] says otherwise: far above
/// what a script's tokens, counters and a data file of a few MB need, far below what a script
/// that accumulates every response (or doubles a string) would reach before the run's end.
pub const DEFAULT_HEAP_LIMIT: usize = 256 << 20;

/// What a state keeps of its output (`print`, `io.write`) until the engine writes it out after
/// its report; the rest is counted and dropped, and a note says so (see [`take_output`]).
pub const MAX_KEPT_OUTPUT: usize = 4 << 20;

/// The stops a script's states share: a signal's (or the run's end's) interrupt, and an exit
/// the script asked for with `os.exit`.
#[derive(Debug)]
pub(crate) struct Stops {
    pub interrupt: AtomicBool,
    /// Why the interrupt was tripped: a signal, or the end of the run (the window and its drain)
    /// passing while the script still ran.
    pub overran: AtomicBool,
    /// `os.exit(code)`'s code, [`NO_EXIT`] until a script calls it (the first call counts).
    pub exit: AtomicI64,
    /// Each state's heap limit, for the error that names it.
    pub heap_limit: usize,
}

/// [`Stops::exit`] before any `os.exit`.
pub(crate) const NO_EXIT: i64 = i64::MIN;

impl Default for Stops {
    fn default() -> Stops {
        Stops {
            interrupt: AtomicBool::new(false),
            overran: AtomicBool::new(false),
            exit: AtomicI64::new(NO_EXIT),
            heap_limit: DEFAULT_HEAP_LIMIT,
        }
    }
}

impl Stops {
    /// Whether a running script must stop now, and the message the hook raises then.
    pub(crate) fn raised(&self) -> Option<&'static str> {
        if self.exit.load(Ordering::Relaxed) != NO_EXIT {
            Some(EXITING)
        } else if self.interrupt.load(Ordering::Relaxed) {
            Some(INTERRUPTED)
        } else {
            None
        }
    }

    /// `result` of a call into `lua`, or the exit error when that state called `os.exit`
    /// (during the call or before), even if a `pcall` caught it and the call returned (the
    /// hook would raise it only 1,000 instructions later, which a short callback never
    /// reaches). Only the state's own exit counts: a call of another thread's state that
    /// returned normally while this one exited did its work, and failing it would charge its
    /// response or request to a stop it had no part in (the shared flag still stops the other
    /// states through the hook and candor's functions).
    pub(crate) fn after<T>(&self, lua: &Lua, result: mlua::Result<T>) -> mlua::Result<T> {
        if exited(lua) {
            return Err(mlua::Error::runtime(EXITING));
        }
        result
    }

    /// The code of the script's `os.exit`, if it called it.
    pub(crate) fn exit_code(&self) -> Option<i32> {
        match self.exit.load(Ordering::Relaxed) {
            NO_EXIT => None,
            code => Some(code as i32),
        }
    }
}

/// The script file, read once and loaded into every state.
#[derive(Debug)]
pub(crate) struct Script {
    /// As the user gave it: error messages say `this:line:`.
    pub display: String,
    pub source: Vec<u8>,
    pub dir: PathBuf,
}

impl Script {
    pub(crate) fn read(path: &Path) -> Result<Script, ScriptError> {
        let display = path.display().to_string();
        let source =
            candor_core::bounded::read_file(path, MAX_SCRIPT_FILE_BYTES, None).map_err(|e| {
                ScriptError::Read {
                    path: display.clone(),
                    reason: e.to_string(),
                }
            })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(Script {
            display,
            source,
            dir,
        })
    }
}

/// Where requests go, as the script sees it in `wrk.scheme/host/port/path/headers/...`.
#[derive(Debug, Clone)]
pub struct ScriptTarget {
    pub url: String,
    /// `-H "Name: value"` headers, in the order given.
    pub headers: Vec<(String, String)>,
    /// The method the run would use without a script (`GET` if `None`).
    pub method: Option<String>,
    /// The body the run would send without a script.
    pub body: Option<Vec<u8>>,
}

impl ScriptTarget {
    /// A target with only a URL: GET, no extra headers, no body.
    pub fn url(url: impl Into<String>) -> ScriptTarget {
        ScriptTarget {
            url: url.into(),
            headers: Vec::new(),
            method: None,
            body: None,
        }
    }
}

/// The parts of a target URL that `wrk` exposes.
#[derive(Debug, Clone)]
pub(crate) struct UrlParts {
    pub scheme: String,
    /// Without IPv6 brackets, as wrk's URL parser gives it.
    pub host: String,
    /// Only when the URL names one.
    pub port: Option<String>,
    /// Path and query, `/` when the URL has none.
    pub path: String,
}

impl UrlParts {
    pub(crate) fn parse(url: &str) -> Result<UrlParts, ScriptError> {
        let bad = |reason: &str| ScriptError::ScriptTarget {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let uri: http::Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
        let scheme = uri
            .scheme_str()
            .ok_or_else(|| bad("no scheme"))?
            .to_string();
        let host = uri.host().ok_or_else(|| bad("no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port().map(|p| p.as_str().to_string());
        let path = match uri.path_and_query() {
            Some(pq) if !pq.as_str().is_empty() => pq.as_str().to_string(),
            _ => "/".to_string(),
        };
        Ok(UrlParts {
            scheme,
            host,
            port,
            path,
        })
    }
}

/// What a state keeps on the Rust side: captured output and a failure `wrk.fail` recorded.
pub(crate) struct StateData {
    /// What the state printed, up to [`MAX_KEPT_OUTPUT`] bytes.
    pub output: Vec<u8>,
    /// Bytes printed beyond that, dropped.
    pub dropped: u64,
    /// Where output goes as it is printed instead (`done()`'s, after candor's report).
    pub sink: Option<Box<dyn Write + Send>>,
    pub failure: Option<String>,
    pub stops: Arc<Stops>,
    /// Set when this state called `os.exit` ([`Stops::exit`] holds the run's first code).
    pub exited: bool,
}

impl StateData {
    fn emit(&mut self, parts: &[&[u8]]) {
        if let Some(sink) = &mut self.sink {
            // A closed stdout must not fail the script's report: what cannot be written is lost.
            for p in parts {
                let _ = sink.write_all(p);
            }
            return;
        }
        for p in parts {
            let room = MAX_KEPT_OUTPUT
                .saturating_sub(self.output.len())
                .min(p.len());
            self.output.extend_from_slice(&p[..room]);
            self.dropped += (p.len() - room) as u64;
        }
    }
}

/// Whether `lua` itself called `os.exit`.
fn exited(lua: &Lua) -> bool {
    lua.app_data_ref::<StateData>().is_some_and(|d| d.exited)
}

/// Raises the interrupt error when the run was interrupted. Every function candor gives
/// scripts calls it: LuaJIT runs compiled loops without calling hooks, but not past a call into
/// Rust.
pub(crate) fn check_interrupt(lua: &Lua) -> mlua::Result<()> {
    match lua.app_data_ref::<StateData>() {
        Some(data) => match data.stops.raised() {
            Some(message) => Err(mlua::Error::runtime(message)),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// How script states are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptOptions {
    /// LuaJIT's compiler on, as wrk. Off by default: LuaJIT never calls hooks from compiled
    /// code, so with it on a loop that calls none of candor's functions cannot be interrupted;
    /// and a request() called from Rust per request measured no faster with it
    /// (docs/benchmarks.md).
    pub jit: bool,
    /// Most bytes each Lua state's heap may hold (the setup state and each thread's); an
    /// allocation past it fails with Lua's `not enough memory`, which fails the callback that
    /// made it. 256 MiB (`DEFAULT_HEAP_LIMIT`) by default.
    pub heap_limit: usize,
}

impl Default for ScriptOptions {
    fn default() -> ScriptOptions {
        ScriptOptions {
            jit: false,
            heap_limit: DEFAULT_HEAP_LIMIT,
        }
    }
}

/// Run in every state before the script: code may be loaded from text only. LuaJIT does not
/// verify bytecode, so a crafted chunk (given to `-s`, or made by a mutated `string.dump` and
/// given to `load`) crashes the process; `load`, `loadstring`, `loadfile`, `dofile` and
/// `require`'s file searcher are replaced by versions that pass mode `"t"`. `io.write` writes to
/// `io.output()` when a script set it to a file (else it is captured with `print`), and returns
/// the file as LuaJIT's does. `os.exit` stops the run instead of the process.
const PRELUDE_LUA: &str = r#"
local capture, exit = ...
local load, loadfile, error, type = load, loadfile, error, type
local searchpath, output, stdout = package.searchpath, io.output, io.stdout
_G.load = function(chunk, name, _, env) return load(chunk, name, "t", env) end
_G.loadstring = function(s, name) return load(s, name, "t") end
_G.loadfile = function(file, _, env) return loadfile(file, "t", env) end
_G.dofile = function(file)
  local f, err = loadfile(file, "t")
  if not f then error(err, 2) end
  return f()
end
package.loaders[2] = function(name)
  local path, err = searchpath(name, package.path)
  if not path then return err end
  local f, lerr = loadfile(path, "t")
  if not f then
    error("error loading module '" .. name .. "' from file '" .. path .. "':\n\t" .. lerr, 2)
  end
  return f
end
io.write = function(...)
  local f = output()
  if f ~= stdout then return f:write(...) end
  capture(...)
  return f
end
os.exit = exit
"#;

/// A fresh state with the `wrk` module and the script loaded (its top level run).
pub(crate) fn new_state(
    script: &Script,
    url: &UrlParts,
    target: &ScriptTarget,
    stops: &Arc<Stops>,
    options: ScriptOptions,
) -> Result<Lua, ScriptError> {
    // wrk opens every library; the safe set here leaves out only `debug`, `ffi` and C modules.
    let lua = Lua::new_with(StdLib::ALL_SAFE, LuaOptions::default())
        .map_err(|e| ScriptError::Lua(one_line(&e)))?;
    // Besides the limit itself, a limit makes mlua protect every allocation it makes on the
    // script's behalf (an allocation failing outside a protected call would abort the process);
    // the thread's own allocator keeps the same limit once installed (lua_heap.rs).
    lua.set_memory_limit(options.heap_limit.max(1))
        .map_err(|e| ScriptError::Lua(one_line(&e)))?;
    lua.set_app_data(StateData {
        output: Vec::new(),
        dropped: 0,
        sink: None,
        failure: None,
        stops: Arc::clone(stops),
        exited: false,
    });
    install(&lua, script, url, target).map_err(|e| ScriptError::Lua(one_line(&e)))?;
    let flag = Arc::clone(stops);
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(INTERRUPT_CHECK_EVERY),
        move |_, _| match flag.raised() {
            Some(message) => Err(mlua::Error::runtime(message)),
            None => Ok(VmState::Continue),
        },
    )
    .map_err(|e| ScriptError::Lua(one_line(&e)))?;
    if !options.jit {
        // Interpreted only: then the hook above sees every loop (LuaJIT never calls hooks from
        // compiled traces).
        lua.load("jit.off()")
            .exec()
            .map_err(|e| ScriptError::Lua(one_line(&e)))?;
    }
    if script.source.first() == Some(&0x1b) {
        // Lua's own message would not say which file, nor why text only.
        return Err(ScriptError::Load {
            message: format!(
                "{}: a precompiled (bytecode) chunk: candor loads Lua source text only (LuaJIT does not verify bytecode)",
                script.display
            ),
        });
    }
    let loaded = lua
        .load(&script.source[..])
        .set_name(format!("@{}", script.display))
        .set_mode(mlua::chunk::ChunkMode::Text)
        .exec();
    stops
        .after(&lua, loaded)
        .map_err(|e| runtime_error(stops, ScriptPhase::Load, &e))?;
    Ok(lua)
}

fn install(lua: &Lua, script: &Script, url: &UrlParts, target: &ScriptTarget) -> mlua::Result<()> {
    let globals = lua.globals();
    let package: Table = globals.get("package")?;
    let path: String = package.get("path")?;
    let dir = script.dir.display();
    // The vendored LuaJIT searches /usr/local only; Debian's wrk, on Debian's LuaJIT, also
    // searches /usr/share/lua/5.1, where Debian's lua-* packages put their Lua modules.
    let mut searched = format!("{dir}/?.lua;{dir}/?/init.lua;{path}");
    if !path.contains(DEBIAN_LUA_DIR) {
        searched.push_str(&format!(
            ";{DEBIAN_LUA_DIR}/?.lua;{DEBIAN_LUA_DIR}/?/init.lua"
        ));
    }
    package.set("path", searched)?;

    let wrk: Table = lua
        .load(WRK_LUA)
        .set_name("=wrk.lua")
        .call(crate::format::builder(lua)?)?;
    wrk.set("scheme", url.scheme.as_str())?;
    wrk.set("host", url.host.as_str())?;
    wrk.set("port", url.port.as_deref())?;
    wrk.set("path", url.path.as_str())?;
    if let Some(method) = &target.method {
        wrk.set("method", method.as_str())?;
    }
    if let Some(body) = &target.body {
        wrk.set("body", lua.create_string(body)?)?;
    }
    let headers: Table = wrk.get("headers")?;
    for (name, value) in &target.headers {
        headers.set(name.as_str(), value.as_str())?;
    }
    wrk.set(
        "lookup",
        lua.create_function(|lua, (host, service): (String, String)| {
            check_interrupt(lua)?;
            let addrs = addr::lookup(&host, &service).map_err(mlua::Error::runtime)?;
            lua.create_sequence_from(addrs.into_iter().map(Addr))
        })?,
    )?;
    wrk.set(
        "connect",
        lua.create_function(|lua, a: mlua::UserDataRef<Addr>| {
            check_interrupt(lua)?;
            Ok(addr::connects(a.0))
        })?,
    )?;
    wrk.set(
        "time_us",
        lua.create_function(|lua, ()| {
            check_interrupt(lua)?;
            Ok(candor_core::clock::wall_clock_ns() / 1000)
        })?,
    )?;
    wrk.set(
        "fail",
        lua.create_function(|lua, reason: Option<String>| {
            check_interrupt(lua)?;
            if let Some(mut data) = lua.app_data_mut::<StateData>() {
                data.failure = Some(reason.unwrap_or_else(|| "wrk.fail()".to_string()));
            }
            Ok(())
        })?,
    )?;
    let loaded: Table = package.get("loaded")?;
    loaded.set("wrk", &wrk)?;
    globals.set("wrk", &wrk)?;

    // print and io.write go to a buffer the engine writes out after its own report, as wrk's
    // done() output follows wrk's.
    globals.set(
        "print",
        lua.create_function(|lua, values: Variadic<Value>| {
            check_interrupt(lua)?;
            let text = joined(lua, &values, b"\t")?;
            if let Some(mut data) = lua.app_data_mut::<StateData>() {
                data.emit(&[&text, b"\n"]);
            }
            Ok(())
        })?,
    )?;
    let capture = lua.create_function(|lua, values: Variadic<Value>| {
        check_interrupt(lua)?;
        let text = joined(lua, &values, b"")?;
        if let Some(mut data) = lua.app_data_mut::<StateData>() {
            data.emit(&[&text]);
        }
        Ok(())
    })?;
    let exit = lua.create_function(|lua, code: Value| {
        // os.exit(true) is success, os.exit(false) failure, as Lua 5.2 and LuaJIT read them.
        let code: i64 = match code {
            Value::Nil | Value::Boolean(true) => 0,
            Value::Boolean(false) => 1,
            Value::Integer(i) => i,
            Value::Number(n) => n as i64,
            _ => 1,
        };
        if let Some(mut data) = lua.app_data_mut::<StateData>() {
            data.exited = true;
            let _ = data.stops.exit.compare_exchange(
                NO_EXIT,
                code.clamp(i32::MIN as i64, i32::MAX as i64),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        Err::<(), _>(mlua::Error::runtime(EXITING))
    })?;
    lua.load(PRELUDE_LUA)
        .set_name("=candor")
        .call::<()>((capture, exit))?;
    Ok(())
}

/// The values as `tostring` writes them, separated by `sep`.
fn joined(lua: &Lua, values: &[Value], sep: &[u8]) -> mlua::Result<Vec<u8>> {
    let tostring: mlua::Function = lua.globals().get("tostring")?;
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep);
        }
        let s: mlua::LuaString = tostring.call(v.clone())?;
        out.extend_from_slice(&s.as_bytes());
    }
    Ok(out)
}

/// Drains what the state printed into `out`, with a line saying how much was dropped past
/// [`MAX_KEPT_OUTPUT`], if any.
pub(crate) fn take_output(lua: &Lua, out: &mut Vec<u8>) {
    if let Some(mut data) = lua.app_data_mut::<StateData>() {
        out.append(&mut data.output);
        let dropped = std::mem::take(&mut data.dropped);
        if dropped > 0 {
            if out.last().is_some_and(|&b| b != b'\n') {
                out.push(b'\n');
            }
            out.extend_from_slice(
                format!(
                    "[candor: {dropped} more bytes printed by the script were dropped: candor keeps the first {} a Lua state prints before done()]\n",
                    candor_core::bounded::format_limit(MAX_KEPT_OUTPUT as u64)
                )
                .as_bytes(),
            );
        }
    }
}

/// Sends what the state prints from now on to `sink` as it is printed (`None`: keep it again).
pub(crate) fn set_sink(lua: &Lua, sink: Option<Box<dyn Write + Send>>) {
    if let Some(mut data) = lua.app_data_mut::<StateData>() {
        data.sink = sink;
    }
}

/// A Lua error raised in `phase`, as the stop that caused it when one did: `os.exit`
/// ([`ScriptError::Exit`]), a signal ([`ScriptError::Interrupted`]), the run's end
/// ([`ScriptError::Overran`]), the heap limit ([`ScriptError::HeapLimit`]).
pub(crate) fn runtime_error(stops: &Stops, phase: ScriptPhase, e: &mlua::Error) -> ScriptError {
    if let Some(code) = stops.exit_code() {
        return ScriptError::Exit { phase, code };
    }
    let message = one_line(e);
    if stops.interrupt.load(Ordering::Relaxed) && message.ends_with(INTERRUPTED) {
        if stops.overran.load(Ordering::Relaxed) {
            return ScriptError::Overran { phase };
        }
        return ScriptError::Interrupted { phase };
    }
    if is_memory_error(e) {
        return ScriptError::HeapLimit {
            phase,
            limit: stops.heap_limit,
        };
    }
    match phase {
        ScriptPhase::Load => ScriptError::Load { message },
        _ => ScriptError::Runtime { phase, message },
    }
}

/// Whether Lua ran out of memory (the state's heap limit), directly or in a Rust function the
/// script called.
fn is_memory_error(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } => is_memory_error(cause),
        mlua::Error::WithContext { cause, .. } => is_memory_error(cause),
        mlua::Error::RuntimeError(m) => m.ends_with("not enough memory"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_output_is_bounded_and_the_excess_is_counted() {
        let lua = Lua::new();
        lua.set_app_data(StateData {
            output: Vec::new(),
            dropped: 0,
            sink: None,
            failure: None,
            stops: Arc::new(Stops::default()),
            exited: false,
        });
        let line = vec![b'x'; 1000];
        for _ in 0..(MAX_KEPT_OUTPUT / 1000 + 10) {
            lua.app_data_mut::<StateData>().unwrap().emit(&[&line]);
        }
        let mut out = Vec::new();
        take_output(&lua, &mut out);
        let (kept, note) = out.split_at(MAX_KEPT_OUTPUT);
        assert!(kept.iter().all(|&b| b == b'x'));
        let dropped = (MAX_KEPT_OUTPUT / 1000 + 10) * 1000 - MAX_KEPT_OUTPUT;
        assert_eq!(
            String::from_utf8_lossy(note),
            format!("\n[candor: {dropped} more bytes printed by the script were dropped: candor keeps the first 4 MiB a Lua state prints before done()]\n")
        );
        // Taken once: the next take starts empty.
        out.clear();
        take_output(&lua, &mut out);
        assert!(out.is_empty());
    }
}
