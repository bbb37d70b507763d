//! The script's setup state: loading, `setup(thread)` for each load thread, `done(...)`.

use crate::error::{one_line, ScriptError, ScriptPhase};
use crate::handle::{ThreadHandle, ThreadShared};
use crate::lua_state::{
    new_state, runtime_error, set_sink, take_output, Script, ScriptOptions, ScriptTarget, Stops,
    UrlParts,
};
use crate::stats::Stats;
use crate::thread::ThreadScript;
use hdrhistogram::Histogram;
use mlua::{Function, Lua, Table, Value};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Error counts of a run as `summary.errors` shows them (wrk's classes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WrkErrorCounts {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    /// Responses with a status above 399.
    pub status: u64,
    pub timeout: u64,
}

/// What `done()` receives as `summary`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub duration_us: u64,
    pub requests: u64,
    pub bytes: u64,
    pub errors: WrkErrorCounts,
}

/// Stops scripts stuck in Lua code: clone it into the signal handling side and call
/// [`InterruptHandle::interrupt`]; the next check in any of the run's states raises an error.
#[derive(Debug, Clone)]
pub struct InterruptHandle(Arc<Stops>);

impl InterruptHandle {
    /// A signal's stop: the script's error is [`ScriptError::Interrupted`].
    pub fn interrupt(&self) {
        self.0.interrupt.store(true, Ordering::Relaxed);
    }

    /// The run's end (its window and drain) has passed while a script may still be running:
    /// its error is [`ScriptError::Overran`], naming the callback that would not return.
    pub fn interrupt_overrun(&self) {
        self.0.overran.store(true, Ordering::Relaxed);
        self.0.interrupt.store(true, Ordering::Relaxed);
    }

    /// Lets the states run again (after the run's interrupt, so that `done()` can still report).
    pub fn clear(&self) {
        self.0.overran.store(false, Ordering::Relaxed);
        self.0.interrupt.store(false, Ordering::Relaxed);
    }

    pub fn is_interrupted(&self) -> bool {
        self.0.interrupt.load(Ordering::Relaxed)
    }

    /// The code the script gave `os.exit`, if it called it (the run then stops as an abort).
    pub fn exit_code(&self) -> Option<i32> {
        self.0.exit_code()
    }
}

/// A loaded script: the setup state (`setup`, `done`), and the factory of per-thread states.
pub struct ScriptHost {
    script: Script,
    url: UrlParts,
    target: ScriptTarget,
    args: Vec<String>,
    setup: Lua,
    /// Strong handles on the thread states, so `thread:get` in `done()` still finds them after
    /// the load threads have dropped their [`ThreadScript`]s.
    threads: Vec<Lua>,
    interrupt: Arc<Stops>,
    options: ScriptOptions,
}

impl ScriptHost {
    /// Reads `path`, and loads it into the setup state (its top level runs, as in wrk).
    /// `args` are the arguments after `--`: `init(args)` sees the URL as `args[0]` and these as
    /// `args[1..]`, as wrk does. A syntax error is a one-line [`ScriptError::Load`].
    pub fn load(
        path: &Path,
        args: Vec<String>,
        target: ScriptTarget,
    ) -> Result<ScriptHost, ScriptError> {
        Self::load_with(path, args, target, ScriptOptions::default())
    }

    /// [`ScriptHost::load`] with options for every state it makes.
    pub fn load_with(
        path: &Path,
        args: Vec<String>,
        target: ScriptTarget,
        options: ScriptOptions,
    ) -> Result<ScriptHost, ScriptError> {
        let script = Script::read(path)?;
        let url = UrlParts::parse(&target.url)?;
        let interrupt = Arc::new(Stops {
            heap_limit: options.heap_limit,
            ..Stops::default()
        });
        let setup = new_state(&script, &url, &target, &interrupt, options)?;
        Ok(ScriptHost {
            script,
            url,
            target,
            args,
            setup,
            threads: Vec::new(),
            interrupt,
            options,
        })
    }

    /// The script as the user named it.
    pub fn script_name(&self) -> &str {
        &self.script.display
    }

    /// Whether the script's file contains `text` (a script that never writes `name` cannot set
    /// `wrk.name`, so the engine keeps no per-name books for it).
    pub fn source_contains(&self, text: &str) -> bool {
        let needle = text.as_bytes();
        !needle.is_empty()
            && self
                .script
                .source
                .windows(needle.len())
                .any(|w| w == needle)
    }

    /// The handle that interrupts every state of this script.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle(Arc::clone(&self.interrupt))
    }

    /// Whether the script defines the global function `name` (`request`, `response`, `delay`,
    /// `done`...), as seen after loading.
    pub fn defines(&self, name: &str) -> bool {
        matches!(
            self.setup.globals().get::<Value>(name),
            Ok(Value::Function(_))
        )
    }

    /// For an open loop: a script that defines `delay()` is refused with one line, since the
    /// schedule, not the script, decides when requests go.
    pub fn check_open_loop(&self) -> Result<(), ScriptError> {
        if self.defines("delay") {
            return Err(ScriptError::DelayInOpenLoop {
                script: self.script.display.clone(),
            });
        }
        Ok(())
    }

    /// Creates `n` thread states (the script loaded in each), runs `setup(thread)` in the setup
    /// state for each, then `init(args)` in each thread's state, as wrk does.
    pub fn setup_threads(&mut self, n: usize) -> Result<Vec<ThreadScript>, ScriptError> {
        let default_addr = self.default_addr();
        let wrk_setup: Function = self.wrk_field(&self.setup, "setup")?;
        let mut scripts = Vec::with_capacity(n);
        for _ in 0..n {
            let state = new_state(
                &self.script,
                &self.url,
                &self.target,
                &self.interrupt,
                self.options,
            )?;
            let shared = Arc::new(ThreadShared::default());
            *shared.addr.lock().expect("addr lock") = default_addr;
            let own_handle = ThreadHandle {
                state: state.weak(),
                shared: Arc::clone(&shared),
            };
            wrk_table(&state)
                .and_then(|wrk| wrk.set("thread", own_handle))
                .map_err(|e| ScriptError::Lua(one_line(&e)))?;

            let handle = self
                .setup
                .create_userdata(ThreadHandle {
                    state: state.weak(),
                    shared: Arc::clone(&shared),
                })
                .map_err(|e| ScriptError::Lua(one_line(&e)))?;
            self.interrupt
                .after(&self.setup, wrk_setup.call::<()>(handle))
                .map_err(|e| self.runtime(ScriptPhase::Setup, &e))?;

            let wrk_init: Function = self.wrk_field(&state, "init")?;
            let args = state
                .create_table()
                .and_then(|t| {
                    t.raw_set(0, self.target.url.as_str())?;
                    for (i, a) in self.args.iter().enumerate() {
                        t.raw_set(i + 1, a.as_str())?;
                    }
                    Ok(t)
                })
                .map_err(|e| ScriptError::Lua(one_line(&e)))?;
            self.interrupt
                .after(&state, wrk_init.call::<()>(args))
                .map_err(|e| self.runtime(ScriptPhase::Init, &e))?;
            self.threads.push(state.clone());
            scripts.push(ThreadScript::new(
                state,
                shared,
                Arc::clone(&self.interrupt),
            )?);
        }
        Ok(scripts)
    }

    /// Calls `done(summary, latency, requests)` if the script defines it and returns what the
    /// setup state printed (during `setup` and `done`), for the engine to write after its own
    /// report, after what the thread states printed. `latency_ns` is in nanoseconds (the script sees microseconds); `requests` holds
    /// per-interval request rates and is passed as is.
    pub fn done(
        &mut self,
        summary: &RunSummary,
        latency_ns: &Histogram<u64>,
        requests: &Histogram<u64>,
    ) -> Result<String, ScriptError> {
        let out = Arc::new(std::sync::Mutex::new(Vec::new()));
        let result = self.done_to(
            summary,
            latency_ns,
            requests,
            Box::new(SharedBuffer(Arc::clone(&out))),
        );
        let out = std::mem::take(&mut *out.lock().unwrap_or_else(|e| e.into_inner()));
        result.map(|()| String::from_utf8_lossy(&out).into_owned())
    }

    /// [`ScriptHost::done`] writing to `out`: first what the states printed before (kept, up to
    /// a bound), then what `done()` prints, as it prints it (a report of any size costs no
    /// memory).
    pub fn done_to(
        &mut self,
        summary: &RunSummary,
        latency_ns: &Histogram<u64>,
        requests: &Histogram<u64>,
        mut out: Box<dyn Write + Send>,
    ) -> Result<(), ScriptError> {
        // What the thread states printed (init(), request()...), then the setup state's (setup()):
        // wrk writes the former as it happens, candor after its report with the rest.
        let mut kept = Vec::new();
        for state in &self.threads {
            take_output(state, &mut kept);
        }
        take_output(&self.setup, &mut kept);
        let _ = out.write_all(&kept);
        drop(kept);
        // After os.exit() the script's process would be gone (wrk's is): no done().
        if !self.defines("done") || self.interrupt.exit_code().is_some() {
            let _ = out.flush();
            return Ok(());
        }
        let lua = &self.setup;
        set_sink(lua, Some(out));
        let call = || -> mlua::Result<()> {
            let done: Function = lua.globals().get("done")?;
            let s = lua.create_table()?;
            s.set("duration", summary.duration_us)?;
            s.set("requests", summary.requests)?;
            s.set("bytes", summary.bytes)?;
            let e = lua.create_table()?;
            e.set("connect", summary.errors.connect)?;
            e.set("read", summary.errors.read)?;
            e.set("write", summary.errors.write)?;
            e.set("status", summary.errors.status)?;
            e.set("timeout", summary.errors.timeout)?;
            s.set("errors", e)?;
            done.call::<()>((s, Stats::new(latency_ns, 1000), Stats::new(requests, 1)))
        };
        let result = self
            .interrupt
            .after(lua, call())
            .map_err(|e| self.runtime(ScriptPhase::Done, &e));
        if let Some(mut data) = lua.app_data_mut::<crate::lua_state::StateData>() {
            if let Some(sink) = &mut data.sink {
                let _ = sink.flush();
            }
            data.sink = None;
        }
        result
    }

    /// The target's first resolved address: what `thread.addr` holds unless `setup` changes it.
    fn default_addr(&self) -> Option<SocketAddr> {
        let port = self.url.port.clone().unwrap_or_else(|| {
            match self.url.scheme.as_str() {
                "https" => "443",
                _ => "80",
            }
            .to_string()
        });
        crate::addr::lookup(&self.url.host, &port)
            .ok()
            .and_then(|a| a.into_iter().next())
    }

    /// `wrk.<name>` in `lua`.
    fn wrk_field<T: mlua::FromLua>(&self, lua: &Lua, name: &str) -> Result<T, ScriptError> {
        wrk_table(lua)
            .and_then(|wrk| wrk.get(name))
            .map_err(|e| ScriptError::Lua(format!("the wrk module: {}", one_line(&e))))
    }

    fn runtime(&self, phase: ScriptPhase, e: &mlua::Error) -> ScriptError {
        runtime_error(&self.interrupt, phase, e)
    }
}

/// The state's `wrk` module table.
fn wrk_table(lua: &Lua) -> mlua::Result<Table> {
    lua.globals().get("wrk")
}

/// A `Write` into a buffer shared with whoever reads it afterwards.
struct SharedBuffer(Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
