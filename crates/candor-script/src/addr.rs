//! Socket addresses as scripts see them: `wrk.lookup`, `wrk.connect` and `thread.addr`.

use mlua::{MetaMethod, UserData, UserDataMethods};
use std::ffi::{CStr, CString};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, TcpStream};
use std::time::Duration;

/// How long `wrk.connect` waits for a TCP handshake before answering false.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// An address userdata; `tostring` gives `host:port` with the numeric host, as wrk does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addr(pub SocketAddr);

impl UserData for Addr {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_meta_method(MetaMethod::ToString, |_, a, ()| {
            Ok(format!("{}:{}", a.0.ip(), a.0.port()))
        });
        methods.add_meta_method(MetaMethod::Eq, |_, a, b: mlua::UserDataRef<Addr>| {
            Ok(a.0 == b.0)
        });
    }
}

/// Resolves `host` and `service` (a port number or a service name such as `http`) with
/// getaddrinfo, as wrk does, so names from /etc/hosts and /etc/services work the same.
/// std's resolver takes only numeric ports, hence libc.
pub fn lookup(host: &str, service: &str) -> Result<Vec<SocketAddr>, String> {
    let fail = |why: &str| format!("unable to resolve {host}:{service}: {why}");
    let c_host = CString::new(host).map_err(|_| fail("a NUL byte in the name"))?;
    let c_service = CString::new(service).map_err(|_| fail("a NUL byte in the service"))?;
    // SAFETY: an all-zero addrinfo is the documented "no hints" value; fields are set below.
    let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
    hints.ai_family = libc::AF_UNSPEC;
    hints.ai_socktype = libc::SOCK_STREAM;
    let mut list: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: valid NUL-terminated strings, valid hints, and an out-pointer we own.
    let rc = unsafe { libc::getaddrinfo(c_host.as_ptr(), c_service.as_ptr(), &hints, &mut list) };
    if rc != 0 {
        // SAFETY: gai_strerror returns a static NUL-terminated string for any code.
        let why = unsafe { CStr::from_ptr(libc::gai_strerror(rc)) };
        return Err(fail(&why.to_string_lossy()));
    }
    let mut addrs = Vec::new();
    let mut node = list;
    while !node.is_null() {
        // SAFETY: `node` is an element of the list getaddrinfo returned, not yet freed.
        let info = unsafe { &*node };
        if let Some(a) = unsafe { to_socket_addr(info) } {
            addrs.push(a);
        }
        node = info.ai_next;
    }
    // SAFETY: `list` came from a successful getaddrinfo and is freed once.
    unsafe { libc::freeaddrinfo(list) };
    Ok(addrs)
}

/// # Safety
/// `info.ai_addr` must point to a sockaddr of `info.ai_family`'s type (getaddrinfo's contract).
unsafe fn to_socket_addr(info: &libc::addrinfo) -> Option<SocketAddr> {
    match info.ai_family {
        libc::AF_INET => {
            let sa = &*(info.ai_addr as *const libc::sockaddr_in);
            let ip = Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sa.sin_port),
            )))
        }
        libc::AF_INET6 => {
            let sa = &*(info.ai_addr as *const libc::sockaddr_in6);
            let ip = Ipv6Addr::from(sa.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sa.sin6_port),
                sa.sin6_flowinfo,
                sa.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Whether a TCP connection to `addr` can be opened now (it is closed at once).
pub fn connects(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_resolves_numeric_and_named_services() {
        let a = lookup("127.0.0.1", "8080").unwrap();
        assert_eq!(a, vec!["127.0.0.1:8080".parse::<SocketAddr>().unwrap()]);
        // Service names come from /etc/services, which a minimal machine may lack.
        if std::path::Path::new("/etc/services").exists() {
            let http = lookup("127.0.0.1", "http").unwrap();
            assert_eq!(http[0].port(), 80);
        }
        let err = lookup("no-such-host.invalid", "80").unwrap_err();
        assert!(
            err.starts_with("unable to resolve no-such-host.invalid:80: "),
            "{err}"
        );
    }
}
