//! The `thread` userdata: `thread.addr`, `thread:get/set` across states, `thread:stop()`.

use crate::addr::Addr;
use mlua::{Lua, UserData, UserDataFields, UserDataMethods, Value, WeakLua};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Tables nested deeper than this cannot be copied between states (a cycle would never end).
const MAX_COPY_DEPTH: usize = 32;

/// What a load thread and the scripts' `thread` objects share.
#[derive(Debug, Default)]
pub(crate) struct ThreadShared {
    /// Set by `thread:stop()`.
    pub stop: AtomicBool,
    /// The address the thread connects to; `None` means the run's own target.
    pub addr: Mutex<Option<SocketAddr>>,
    /// Set when the script assigned `thread.addr`: the thread's connections go there.
    pub addr_set: AtomicBool,
}

/// A thread as a script sees it, in the setup state (`setup(thread)`) and in the thread's own
/// state (`wrk.thread`). Weak: the thread's state must not keep itself alive.
pub(crate) struct ThreadHandle {
    pub state: WeakLua,
    pub shared: Arc<ThreadShared>,
}

impl ThreadHandle {
    fn state(&self) -> mlua::Result<Lua> {
        self.state
            .try_upgrade()
            .ok_or_else(|| mlua::Error::runtime("the thread's Lua state is gone"))
    }
}

impl UserData for ThreadHandle {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("addr", |_, t| {
            Ok(t.shared.addr.lock().expect("addr lock").map(Addr))
        });
        fields.add_field_method_set("addr", |_, t, a: mlua::UserDataRef<Addr>| {
            *t.shared.addr.lock().expect("addr lock") = Some(a.0);
            t.shared.addr_set.store(true, Ordering::Relaxed);
            Ok(())
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("get", |lua, t, name: String| {
            let state = t.state()?;
            let value: Value = state.globals().get(name.as_str())?;
            copy_value(&value, lua, 0)
        });
        methods.add_method("set", |_, t, (name, value): (String, Value)| {
            let state = t.state()?;
            let copied = copy_value(&value, &state, 0)?;
            state.globals().set(name.as_str(), copied)
        });
        methods.add_method("stop", |_, t, ()| {
            t.shared.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
    }
}

/// Copies a value into `to` (another state, or the same): booleans, nil, numbers, strings and
/// tables of those, as wrk's `thread:get/set` transfer them. Anything else is an error.
pub(crate) fn copy_value(value: &Value, to: &Lua, depth: usize) -> mlua::Result<Value> {
    Ok(match value {
        Value::Nil => Value::Nil,
        Value::Boolean(b) => Value::Boolean(*b),
        Value::Integer(i) => Value::Integer(*i),
        Value::Number(n) => Value::Number(*n),
        Value::String(s) => Value::String(to.create_string(s.as_bytes())?),
        Value::Table(t) => {
            if depth >= MAX_COPY_DEPTH {
                return Err(mlua::Error::runtime(format!(
                    "cannot transfer a table nested deeper than {MAX_COPY_DEPTH} levels (a cycle?)"
                )));
            }
            let copy = to.create_table()?;
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                copy.raw_set(
                    copy_value(&k, to, depth + 1)?,
                    copy_value(&v, to, depth + 1)?,
                )?;
            }
            Value::Table(copy)
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "cannot transfer '{}' to thread",
                crate::error::lua_type(other)
            )))
        }
    })
}
