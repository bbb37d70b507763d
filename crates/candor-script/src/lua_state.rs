//! Building one Lua state the way wrk does: standard libraries, `require` beside the script,
//! the `wrk` module with the target's fields, captured output, the interrupt hook, the script.

use crate::addr::{self, Addr};
use crate::error::{one_line, ScriptError};
use mlua::{HookTriggers, Lua, LuaOptions, StdLib, Table, Value, Variadic, VmState};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
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
        let source = std::fs::read(path).map_err(|error| ScriptError::Read {
            path: display.clone(),
            error,
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
pub struct Target {
    pub url: String,
    /// `-H "Name: value"` headers, in the order given.
    pub headers: Vec<(String, String)>,
    /// The method the run would use without a script (`GET` if `None`).
    pub method: Option<String>,
    /// The body the run would send without a script.
    pub body: Option<Vec<u8>>,
}

impl Target {
    /// A target with only a URL: GET, no extra headers, no body.
    pub fn url(url: impl Into<String>) -> Target {
        Target {
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
        let bad = |reason: &str| ScriptError::Target {
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
    pub output: Vec<u8>,
    pub failure: Option<String>,
    pub interrupt: Arc<AtomicBool>,
}

/// Raises the interrupt error when the run was interrupted. Every function candor gives
/// scripts calls it: LuaJIT runs compiled loops without calling hooks, but not past a call into
/// Rust.
pub(crate) fn check_interrupt(lua: &Lua) -> mlua::Result<()> {
    match lua.app_data_ref::<StateData>() {
        Some(data) if data.interrupt.load(Ordering::Relaxed) => {
            Err(mlua::Error::runtime(INTERRUPTED))
        }
        _ => Ok(()),
    }
}

/// How script states are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScriptOptions {
    /// LuaJIT's compiler on, as wrk. Off by default: LuaJIT never calls hooks from compiled
    /// code, so with it on a loop that calls none of candor's functions cannot be interrupted;
    /// and a request() called from Rust per request measured no faster with it
    /// (docs/benchmarks.md).
    pub jit: bool,
}

/// A fresh state with the `wrk` module and the script loaded (its top level run).
pub(crate) fn new_state(
    script: &Script,
    url: &UrlParts,
    target: &Target,
    interrupt: &Arc<AtomicBool>,
    options: ScriptOptions,
) -> Result<Lua, ScriptError> {
    // wrk opens every library; the safe set here leaves out only `debug`, `ffi` and C modules.
    let lua = Lua::new_with(StdLib::ALL_SAFE, LuaOptions::default())
        .map_err(|e| ScriptError::Lua(one_line(&e)))?;
    lua.set_app_data(StateData {
        output: Vec::new(),
        failure: None,
        interrupt: Arc::clone(interrupt),
    });
    install(&lua, script, url, target).map_err(|e| ScriptError::Lua(one_line(&e)))?;
    let flag = Arc::clone(interrupt);
    lua.set_global_hook(
        HookTriggers::new().every_nth_instruction(INTERRUPT_CHECK_EVERY),
        move |_, _| {
            if flag.load(Ordering::Relaxed) {
                Err(mlua::Error::runtime(INTERRUPTED))
            } else {
                Ok(VmState::Continue)
            }
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
    lua.load(&script.source[..])
        .set_name(format!("@{}", script.display))
        .exec()
        .map_err(|e| {
            if interrupt.load(Ordering::Relaxed) {
                ScriptError::Interrupted {
                    phase: crate::Phase::Load,
                }
            } else {
                ScriptError::Load {
                    message: one_line(&e),
                }
            }
        })?;
    Ok(lua)
}

fn install(lua: &Lua, script: &Script, url: &UrlParts, target: &Target) -> mlua::Result<()> {
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
                data.output.extend_from_slice(&text);
                data.output.push(b'\n');
            }
            Ok(())
        })?,
    )?;
    let io: Table = globals.get("io")?;
    io.set(
        "write",
        lua.create_function(|lua, values: Variadic<Value>| {
            check_interrupt(lua)?;
            let text = joined(lua, &values, b"")?;
            if let Some(mut data) = lua.app_data_mut::<StateData>() {
                data.output.extend_from_slice(&text);
            }
            Ok(())
        })?,
    )?;
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

/// Drains what the state printed into `out`.
pub(crate) fn take_output(lua: &Lua, out: &mut Vec<u8>) {
    if let Some(mut data) = lua.app_data_mut::<StateData>() {
        out.append(&mut data.output);
    }
}
