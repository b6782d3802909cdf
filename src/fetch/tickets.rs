//! TLS sessions kept for resumption, sized for a crawl: one entry per server name, for as
//! many servers as a crawl talks to in turn.
//!
//! A resumed handshake skips the certificate and its signature on both sides: less work for
//! geode, and for a capsule on a small machine, whose signature is the dearest part of a
//! handshake. rustls' own in-memory store counts its capacity in tickets, eight per server,
//! so the default of 256 remembers only 32 servers: a crawl taking turns among a hundred
//! capsules had forgotten a capsule's tickets by its next connection, and resumed almost
//! none (16 of 10,100 handshakes on the bench-crawl farm). This store keeps the two newest
//! tickets of each server (a server sends two a connection here, and one is used a
//! connection) and forgets the server used longest ago when full.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// Servers remembered at once: more than a crawl holds leased (`hosts` are leased a few
/// hundred at a time), at a few KiB each (a ticket carries the server's certificates).
pub const SERVERS: usize = 1024;

/// TLS 1.3 tickets kept per server: the newest are the likeliest to be honoured.
const TICKETS_PER_SERVER: usize = 2;

/// What is remembered of one server.
#[derive(Debug)]
struct Server<T13, T12> {
    /// When it was last used, in the store's own count of uses.
    used: u64,
    kx_hint: Option<NamedGroup>,
    tls12: Option<T12>,
    tls13: VecDeque<T13>,
}

impl<T13, T12> Server<T13, T12> {
    fn new(used: u64) -> Self {
        Server {
            used,
            kx_hint: None,
            tls12: None,
            tls13: VecDeque::with_capacity(TICKETS_PER_SERVER),
        }
    }
}

/// The bookkeeping, generic over the session values so that it can be tested without a
/// handshake.
#[derive(Debug)]
struct Servers<K, T13, T12> {
    capacity: usize,
    uses: u64,
    map: HashMap<K, Server<T13, T12>>,
}

impl<K: std::hash::Hash + Eq + Clone, T13, T12> Servers<K, T13, T12> {
    fn new(capacity: usize) -> Self {
        Servers {
            capacity: capacity.max(1),
            uses: 0,
            map: HashMap::new(),
        }
    }

    /// The entry of `key`, made (forgetting the server used longest ago when full) if absent.
    fn entry(&mut self, key: &K) -> &mut Server<T13, T12> {
        self.uses += 1;
        let now = self.uses;
        if !self.map.contains_key(key) {
            if self.map.len() >= self.capacity {
                // A scan, but only when a new server arrives in a full store.
                if let Some(oldest) = self
                    .map
                    .iter()
                    .min_by_key(|(_, s)| s.used)
                    .map(|(k, _)| k.clone())
                {
                    self.map.remove(&oldest);
                }
            }
            self.map.insert(key.clone(), Server::new(now));
        }
        let server = self.map.get_mut(key).expect("inserted above");
        server.used = now;
        server
    }

    /// The entry of `key` if it exists, marked as used.
    fn existing(&mut self, key: &K) -> Option<&mut Server<T13, T12>> {
        self.uses += 1;
        let now = self.uses;
        let server = self.map.get_mut(key)?;
        server.used = now;
        Some(server)
    }

    fn push_ticket(&mut self, key: &K, ticket: T13) {
        let tickets = &mut self.entry(key).tls13;
        if tickets.len() >= TICKETS_PER_SERVER {
            tickets.pop_front();
        }
        tickets.push_back(ticket);
    }

    /// The newest ticket of `key`, taken (a TLS 1.3 ticket is offered once).
    fn take_ticket(&mut self, key: &K) -> Option<T13> {
        self.existing(key)?.tls13.pop_back()
    }
}

/// A [`ClientSessionStore`] for the crawl's TLS clients (see the module doc).
#[derive(Debug)]
pub struct SessionTickets {
    servers: Mutex<Servers<ServerName<'static>, Tls13ClientSessionValue, Tls12ClientSessionValue>>,
}

impl SessionTickets {
    /// A store remembering up to `servers` servers.
    pub fn new(servers: usize) -> Self {
        SessionTickets {
            servers: Mutex::new(Servers::new(servers)),
        }
    }

    fn with<R>(
        &self,
        f: impl FnOnce(
            &mut Servers<ServerName<'static>, Tls13ClientSessionValue, Tls12ClientSessionValue>,
        ) -> R,
    ) -> R {
        // A panic while the lock was held cannot leave the map half-changed in a way that
        // matters: at worst a session is missing, and the handshake is a full one.
        let mut servers = self.servers.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut servers)
    }
}

impl ClientSessionStore for SessionTickets {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.with(|s| s.entry(&server_name).kx_hint = Some(group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        let key = server_name.to_owned();
        self.with(|s| s.existing(&key).and_then(|e| e.kx_hint))
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(|s| s.entry(&server_name).tls12 = Some(value));
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        let key = server_name.to_owned();
        self.with(|s| s.existing(&key).and_then(|e| e.tls12.clone()))
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.with(|s| {
            if let Some(e) = s.map.get_mut(server_name) {
                e.tls12 = None;
            }
        });
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.with(|s| s.push_ticket(&server_name, value));
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.with(|s| s.take_ticket(server_name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Test = Servers<&'static str, u32, u32>;

    #[test]
    fn the_newest_ticket_is_offered_and_only_once() {
        let mut s = Test::new(4);
        s.push_ticket(&"a", 1);
        s.push_ticket(&"a", 2);
        assert_eq!(s.take_ticket(&"a"), Some(2));
        assert_eq!(s.take_ticket(&"a"), Some(1));
        assert_eq!(s.take_ticket(&"a"), None);
        assert_eq!(s.take_ticket(&"b"), None);
    }

    #[test]
    fn a_server_keeps_its_two_newest_tickets() {
        let mut s = Test::new(4);
        for t in 1..=5 {
            s.push_ticket(&"a", t);
        }
        assert_eq!(s.take_ticket(&"a"), Some(5));
        assert_eq!(s.take_ticket(&"a"), Some(4));
        assert_eq!(s.take_ticket(&"a"), None);
    }

    #[test]
    fn a_full_store_forgets_the_server_used_longest_ago() {
        let mut s = Test::new(2);
        s.push_ticket(&"a", 1);
        s.push_ticket(&"b", 2);
        // Using a makes b the one used longest ago.
        assert!(s.existing(&"a").is_some());
        s.push_ticket(&"c", 3);
        assert_eq!(s.map.len(), 2);
        assert_eq!(s.take_ticket(&"b"), None);
        assert_eq!(s.take_ticket(&"a"), Some(1));
        assert_eq!(s.take_ticket(&"c"), Some(3));
    }

    #[test]
    fn a_hundred_servers_taking_turns_all_keep_their_tickets() {
        // What the crawl does: each server's connection comes after every other one's.
        let mut s = Test::new(SERVERS);
        let names: Vec<&'static str> = (0..100)
            .map(|i| &*Box::leak(format!("cap{i:03}.test").into_boxed_str()))
            .collect();
        for round in 0..5u32 {
            for name in &names {
                if round > 0 {
                    assert!(s.take_ticket(name).is_some(), "{name} lost its ticket");
                }
                s.push_ticket(name, round);
                s.push_ticket(name, round);
            }
        }
    }
}
