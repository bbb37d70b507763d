//! What can go wrong with a script, each as one line fit for `candor: error: ...`.

use std::fmt;

/// The script function an error came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptPhase {
    /// Loading the file and running its top level.
    Load,
    Setup,
    Init,
    Request,
    Response,
    Delay,
    Done,
}

impl fmt::Display for ScriptPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScriptPhase::Load => "loading the script",
            ScriptPhase::Setup => "setup()",
            ScriptPhase::Init => "init()",
            ScriptPhase::Request => "request()",
            ScriptPhase::Response => "response()",
            ScriptPhase::Delay => "delay()",
            ScriptPhase::Done => "done()",
        })
    }
}

/// A script failure. Every variant displays as one line.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The script file could not be read.
    /// (The reason is text, not a chained source: `{:#}` would print it twice.)
    #[error("cannot read script {path}: {reason}")]
    Read { path: String, reason: String },
    /// A syntax error, or an error raised by the file's top-level code: `script.lua:12: ...`.
    #[error("{message}")]
    Load { message: String },
    /// An error raised while a script function ran; `message` starts with its location.
    #[error("{message} (in {phase})")]
    Runtime { phase: ScriptPhase, message: String },
    /// `request()` returned something that is not a string.
    #[error("request() returned {type_name}, not a string")]
    NotAString { type_name: &'static str },
    /// `request()` returned a string that is not a whole HTTP/1.1 request (or several).
    #[error("request() returned an invalid HTTP request: {reason}")]
    InvalidRequest { reason: String },
    /// `delay()` returned something that is not a number.
    #[error("delay() returned {type_name}, not a number of milliseconds")]
    DelayNotANumber { type_name: &'static str },
    /// The script defines `delay()`, which only a closed loop can honour.
    #[error("{script} defines delay(), which an open loop cannot honour (its schedule decides when requests are sent): run it closed loop or remove delay()")]
    DelayInOpenLoop { script: String },
    /// The target URL given to the script runtime could not be split into its parts.
    #[error("invalid target URL {url}: {reason}")]
    ScriptTarget { url: String, reason: String },
    /// The run was interrupted (SIGINT/SIGTERM) while the script was running.
    #[error("script interrupted while in {phase}")]
    Interrupted { phase: ScriptPhase },
    /// A callback was still running when the run's window and its drain had passed: stopped
    /// there, as a signal would have stopped it.
    #[error("{phase} was still running at the end of the run (the duration and the drain) and was stopped there")]
    Overran { phase: ScriptPhase },
    /// The script called `os.exit(code)`: the run stops as `thread:stop()` stops it.
    #[error("the script called os.exit({code}) in {phase}")]
    Exit { phase: ScriptPhase, code: i32 },
    /// A Lua state's heap reached its limit (`--script-memory`).
    #[error("the script's Lua heap reached its limit of {} in {phase} (--script-memory sets it)", candor_core::bounded::format_limit(*limit as u64))]
    HeapLimit { phase: ScriptPhase, limit: usize },
    /// The Lua runtime itself failed (out of memory, a state that cannot be created).
    #[error("Lua runtime: {0}")]
    Lua(String),
}

impl ScriptError {
    /// Whether the error is a stop of the run (a signal, the run's end, `os.exit`), not a
    /// fault of the call it ended: what that call was doing is unfinished, not failed.
    pub fn is_stop(&self) -> bool {
        matches!(
            self,
            ScriptError::Interrupted { .. }
                | ScriptError::Overran { .. }
                | ScriptError::Exit { .. }
        )
    }
}

/// Lua's name for a value's type (`number` for integers too), as scripts' authors know them.
pub(crate) fn lua_type(value: &mlua::Value) -> &'static str {
    match value {
        mlua::Value::Integer(_) => "number",
        other => other.type_name(),
    }
}

/// The message of a Lua error on one line, with the script location first when Lua gave one.
///
/// Errors raised by Lua code carry `file:line:` already; errors raised by a Rust function
/// (`wrk.lookup` failing) carry the location only in the traceback, so it is taken from there.
pub(crate) fn one_line(err: &mlua::Error) -> String {
    match err {
        mlua::Error::SyntaxError { message, .. } => joined_lines(message),
        mlua::Error::RuntimeError(message) => joined_lines(message),
        mlua::Error::CallbackError { traceback, cause } => {
            let inner = one_line(cause);
            let inner = without_mlua_location(&inner).to_string();
            match script_frame(traceback) {
                Some(frame) if !inner.starts_with(&format!("{frame}:")) => {
                    format!("{frame}: {inner}")
                }
                _ => inner,
            }
        }
        mlua::Error::WithContext { context, cause } => format!("{context}: {}", one_line(cause)),
        other => joined_lines(&other.to_string()),
    }
}

/// A Lua message on one line: its lines joined, without the traceback mlua appends. Some
/// messages keep their cause on later lines (`require`: `module 'socket' not found:` then
/// each place searched, and why C modules cannot load), so the first line alone says nothing.
fn joined_lines(s: &str) -> String {
    let message = match s.find("\nstack traceback:") {
        Some(at) => &s[..at],
        None => s,
    };
    let mut out = String::with_capacity(message.len());
    for line in message.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
    }
    out
}

/// mlua's own helper chunks are named `__mlua...`: a location in them means nothing to a user.
fn is_mlua_chunk(file: &str) -> bool {
    file.starts_with("__mlua")
}

/// `message` without a leading `__mlua_x:8: ` location.
fn without_mlua_location(message: &str) -> &str {
    if !is_mlua_chunk(message) {
        return message;
    }
    let mut parts = message.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(line), Some(rest)) if line.bytes().all(|b| b.is_ascii_digit()) => {
            rest.trim_start()
        }
        _ => message,
    }
}

/// The first frame of a Lua traceback that is script code (`file:12`), not a C function.
fn script_frame(traceback: &str) -> Option<&str> {
    traceback.lines().map(str::trim).find_map(|line| {
        if line.starts_with('[') || is_mlua_chunk(line) {
            return None;
        }
        let mut parts = line.splitn(3, ':');
        let file = parts.next()?;
        let number = parts.next()?;
        (!file.is_empty() && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
            .then(|| &line[..file.len() + 1 + number.len()])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_on_several_lines_keeps_its_cause_on_one_line() {
        let require = "module 'socket' not found:\n\tno field package.preload['socket']\n\tno file './socket.lua'\n\tcan't load C modules in safe mode\nstack traceback:\n\t[C]: in function 'require'";
        assert_eq!(
            one_line(&mlua::Error::RuntimeError(require.to_string())),
            "module 'socket' not found: no field package.preload['socket']; no file './socket.lua'; can't load C modules in safe mode"
        );
        assert_eq!(joined_lines("x.lua:3: boom"), "x.lua:3: boom");
    }

    #[test]
    fn the_location_comes_from_the_traceback_when_a_rust_function_raised() {
        let tb = "stack traceback:\n\t[C]: in function 'lookup'\n\tx/s.lua:7: in function 'setup'";
        assert_eq!(script_frame(tb), Some("x/s.lua:7"));
        let err = mlua::Error::CallbackError {
            traceback: tb.to_string(),
            cause: std::sync::Arc::new(mlua::Error::runtime("unable to resolve nowhere:80: no")),
        };
        assert_eq!(
            one_line(&err),
            "x/s.lua:7: unable to resolve nowhere:80: no"
        );
    }
}
