//! The string `wrk.format` returns, built by one C function: the request line, each header and
//! the body are concatenated once, into one new Lua string.
//!
//! Written against the Lua C API rather than mlua's safe functions because it runs on every
//! request of a dynamic script: the Lua version made a string per line and another for the
//! whole, and each new string is interned, swept and freed again (the largest share of a call,
//! docs/benchmarks.md). The arguments' defaults and the side effects on the headers table stay
//! in wrk.lua; this function only builds.

use mlua::ffi::{self, lua_State};
use mlua::{Function, Lua};
use std::os::raw::c_int;

/// Header lines folded into one string at a time, so that a table of any size fits the C stack.
const PARTS_PER_FOLD: c_int = 64;

/// The upvalues of the builder: the separators, made once.
const SEPARATORS: [&[u8]; 4] = [b" ", b" HTTP/1.1\r\n", b": ", b"\r\n"];
const SPACE: c_int = 1;
const VERSION: c_int = 2;
const COLON: c_int = 3;
const CRLF: c_int = 4;

/// The stack slot that keeps the key of the headers' traversal.
const KEY: c_int = 5;

/// The builder as a Lua function `build(method, path, headers, body)`: `method` and `path` are
/// strings or numbers, `headers` a table written in `pairs()` order (each value as `tostring`
/// gives it), `body` a string or nil.
pub(crate) fn builder(lua: &Lua) -> mlua::Result<Function> {
    // SAFETY: exec_raw runs the closure in a protected call with room on the stack for what it
    // pushes (four strings, then the closure that takes them as upvalues).
    unsafe {
        lua.exec_raw::<Function>((), |state| {
            for s in SEPARATORS {
                ffi::lua_pushlstring(state, s.as_ptr().cast(), s.len());
            }
            ffi::lua_pushcclosure(state, build, SEPARATORS.len() as c_int);
        })
    }
}

fn is_text(state: *mut lua_State, index: c_int) -> bool {
    // SAFETY: index is an argument or stack slot of the running C function.
    matches!(
        unsafe { ffi::lua_type(state, index) },
        ffi::LUA_TSTRING | ffi::LUA_TNUMBER
    )
}

/// Raises the message on top of the stack, prefixed with the script's line that called
/// `wrk.format` (level 0 is this function, which wrk.format tail-calls: level 1 is wrk.format's
/// caller; none when that too was a tail call, `return wrk.format(...)`, which leaves no frame
/// of the script to name).
///
/// # Safety
/// Called from `build` only, with no Rust value alive that needs dropping: lua_error unwinds.
unsafe fn raise(state: *mut lua_State) -> c_int {
    // SAFETY: lua_Debug is integers, pointers and a char array, all valid when zero.
    let mut frame: ffi::lua_Debug = std::mem::zeroed();
    let mut level = 1;
    while ffi::lua_getstack(state, level, &mut frame) != 0 {
        ffi::lua_getinfo(state, c"l".as_ptr(), &mut frame);
        if frame.currentline > 0 {
            ffi::luaL_where(state, level);
            ffi::lua_insert(state, -2);
            ffi::lua_concat(state, 2);
            break;
        }
        level += 1;
    }
    ffi::lua_error(state)
}

/// Whether the string or number at `index` holds a CR, LF or NUL: the bytes that end or cut a
/// line of an HTTP/1.1 head (candor-load's `wire::breaks_line`), so that a value holding them
/// would reach the wire as more headers, or more requests. A number at `index` is made a
/// string in place, as `lua_concat` would make it.
///
/// # Safety
/// `index` is a valid slot of the running C function; no traversal's key is at `index`.
unsafe fn breaks_line(state: *mut lua_State, index: c_int) -> bool {
    let mut len = 0;
    let bytes = ffi::lua_tolstring(state, index, &mut len);
    !bytes.is_null()
        && std::slice::from_raw_parts(bytes.cast::<u8>(), len)
            .iter()
            .any(|&b| matches!(b, b'\r' | b'\n' | 0))
}

/// Raises `bad argument #n to 'format' (what expected, got type)`, as Lua's own checks word it.
///
/// # Safety
/// As [`raise`]; `expected` ends with a NUL.
unsafe fn argument_error(state: *mut lua_State, index: c_int, expected: &'static [u8]) -> c_int {
    let got = ffi::lua_typename(state, ffi::lua_type(state, index));
    ffi::lua_pushfstring(
        state,
        c"bad argument #%d to 'format' (%s expected, got %s)".as_ptr(),
        index,
        expected.as_ptr(),
        got,
    );
    raise(state)
}

/// The C function behind [`builder`]. Everything on the Rust side is plain integers: a Lua
/// error raised inside (a `__tostring` that fails, memory) unwinds through no destructor.
unsafe extern "C-unwind" fn build(state: *mut lua_State) -> c_int {
    ffi::lua_settop(state, 4);
    if !is_text(state, 1) {
        return argument_error(state, 1, b"string\0");
    }
    if !is_text(state, 2) {
        return argument_error(state, 2, b"string\0");
    }
    if ffi::lua_type(state, 3) != ffi::LUA_TTABLE {
        return argument_error(state, 3, b"table\0");
    }
    let has_body = match ffi::lua_type(state, 4) {
        ffi::LUA_TNIL => false,
        ffi::LUA_TSTRING => true,
        _ => return argument_error(state, 4, b"string or nil\0"),
    };
    // wrk writes what it is given; candor lets nothing that would change the request's shape
    // reach the wire (a line break in a value is a header or a request the script never made).
    if breaks_line(state, 1) {
        ffi::lua_pushstring(
            state,
            c"the method given to 'format' holds a line break or NUL, which would cut the request line".as_ptr(),
        );
        return raise(state);
    }
    if breaks_line(state, 2) {
        ffi::lua_pushstring(
            state,
            c"the path given to 'format' holds a line break or NUL, which would cut the request line".as_ptr(),
        );
        return raise(state);
    }
    // Slot 5 keeps the traversal's key; the parts of the request go above it, `parts` of them
    // not yet folded into one string. The first five pushes fit in the LUA_MINSTACK slots a C
    // function is given; the stack is grown only as headers need it (asking for more each call
    // would grow it after every collection, which shrinks it again: an allocation per cycle).
    ffi::lua_pushnil(state);
    ffi::lua_pushvalue(state, 1);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(SPACE));
    ffi::lua_pushvalue(state, 2);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(VERSION));
    let mut parts: c_int = 4;
    loop {
        // A round pushes the key again, the value, `tostring`, and two separators.
        if ffi::lua_checkstack(state, 5) == 0 {
            ffi::lua_pushstring(state, c"stack overflow in 'format'".as_ptr());
            return raise(state);
        }
        ffi::lua_pushvalue(state, KEY);
        if ffi::lua_next(state, 3) == 0 {
            break;
        }
        // ... parts, name, value
        ffi::lua_pushvalue(state, -2);
        ffi::lua_replace(state, KEY);
        if !is_text(state, -2) {
            let got = ffi::lua_typename(state, ffi::lua_type(state, -2));
            ffi::lua_pushfstring(
                state,
                c"a header name must be a string (got a %s value) in 'format'".as_ptr(),
                got,
            );
            return raise(state);
        }
        if !is_text(state, -1) {
            // As the Lua version's tostring(value): booleans, tables with __tostring, ...
            ffi::lua_getglobal(state, c"tostring".as_ptr());
            ffi::lua_insert(state, -2);
            ffi::lua_call(state, 1, 1);
            if ffi::lua_type(state, -1) != ffi::LUA_TSTRING {
                ffi::lua_pushstring(
                    state,
                    c"'tostring' must return a string to 'format'".as_ptr(),
                );
                return raise(state);
            }
        }
        // The key's copy in KEY drives the traversal: the name at -2 may become a string.
        if breaks_line(state, -2) {
            ffi::lua_pushstring(
                state,
                c"a header name given to 'format' holds a line break or NUL, which would start another header".as_ptr(),
            );
            return raise(state);
        }
        if breaks_line(state, -1) {
            ffi::lua_pushfstring(
                state,
                c"the value of header '%s' given to 'format' holds a line break or NUL, which would start another header".as_ptr(),
                ffi::lua_tolstring(state, -2, std::ptr::null_mut()),
            );
            return raise(state);
        }
        // ... parts, name, ": ", value, "\r\n"
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(COLON));
        ffi::lua_insert(state, -2);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(CRLF));
        parts += 4;
        if parts >= PARTS_PER_FOLD {
            ffi::lua_concat(state, parts);
            parts = 1;
        }
    }
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(CRLF));
    parts += 1;
    if has_body {
        ffi::lua_pushvalue(state, 4);
        parts += 1;
    }
    ffi::lua_concat(state, parts);
    1
}
