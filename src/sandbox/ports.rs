//! Free loopback ports for the sandbox's servers.

use std::collections::HashSet;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::Mutex;

/// Ports handed out by this process, so clusters started in parallel never share one.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// `n` distinct ports that were free on 127.0.0.1 a moment ago. Listeners are held until all
/// are found so the kernel does not give the same port twice.
pub fn allocate(n: usize) -> std::io::Result<Vec<u16>> {
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
    let handed = handed.get_or_insert_with(HashSet::new);
    let mut listeners = Vec::with_capacity(n);
    let mut ports = Vec::with_capacity(n);
    while ports.len() < n {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        listeners.push(listener);
        if handed.insert(port) {
            ports.push(port);
        }
    }
    Ok(ports)
}

/// True when nothing listens on `127.0.0.1:port` and we may bind it.
pub fn is_free(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocated_ports_are_distinct_and_free() {
        let a = allocate(8).unwrap();
        let b = allocate(8).unwrap();
        let all: HashSet<u16> = a.iter().chain(&b).copied().collect();
        assert_eq!(all.len(), 16);
        assert!(a.iter().all(|p| is_free(*p)));
    }

    #[test]
    fn a_bound_port_is_not_free() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        assert!(!is_free(listener.local_addr().unwrap().port()));
    }
}
