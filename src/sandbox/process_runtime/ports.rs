//! Free loopback ports for the sandbox's servers, taken below the kernel's ephemeral range: a
//! port from that range (what binding port 0 gives) can be taken by any client connection's
//! source port between our check and the server's own bind, and a server then fails with
//! "address already in use" (seen with two sandboxes starting side by side).

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::{Ipv4Addr, TcpListener};
use std::ops::Range;
use std::sync::Mutex;

/// Ports handed out by this process, so clusters started in parallel never share one.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// The lowest port handed out: above the well-known and most registered services' ports.
const LOWEST: u16 = 10_000;
/// Where the kernel's ephemeral range starts when `/proc` does not say.
const EPHEMERAL_START: u16 = 32_768;

/// The ports to choose from: from [`LOWEST`] up to the start of the ephemeral range.
fn candidates() -> Range<u16> {
    let start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_START);
    LOWEST..start.max(LOWEST + 1_000)
}

/// `n` distinct ports that were free on 127.0.0.1 a moment ago, chosen at random among
/// [`candidates`] so that sandboxes started at once by other processes rarely pick the same.
/// Listeners are held until all are found.
pub fn allocate(n: usize) -> std::io::Result<Vec<u16>> {
    let mut handed = HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner());
    let handed = handed.get_or_insert_with(HashSet::new);
    let range = candidates();
    let width = u64::from(range.end - range.start);
    let random = RandomState::new();
    let mut listeners = Vec::with_capacity(n);
    let mut ports = Vec::with_capacity(n);
    for attempt in 0u64.. {
        if ports.len() == n {
            break;
        }
        if attempt > 100 * n as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("no {n} free ports on 127.0.0.1 in {range:?}"),
            ));
        }
        let port = range.start + (random.hash_one(attempt) % width) as u16;
        if handed.contains(&port) {
            continue;
        }
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            listeners.push(listener);
            handed.insert(port);
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
    fn allocated_ports_are_distinct_free_and_outside_the_ephemeral_range() {
        let a = allocate(8).unwrap();
        let b = allocate(8).unwrap();
        let all: HashSet<u16> = a.iter().chain(&b).copied().collect();
        assert_eq!(all.len(), 16);
        assert!(a.iter().all(|p| is_free(*p)));
        let range = candidates();
        assert!(all.iter().all(|p| range.contains(p)), "{all:?} in {range:?}");
    }

    #[test]
    fn a_bound_port_is_not_free() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        assert!(!is_free(listener.local_addr().unwrap().port()));
    }
}
