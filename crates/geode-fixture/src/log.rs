//! The server's request log, kept compact so that a crawl of a generated geminispace (600,000
//! requests and more) fits in a few tens of MB: times as nanoseconds, addresses and repeated
//! strings (SNI names, request hosts, metas) stored once and referred to by number, the request
//! line as its host's number and the rest. [`RequestRecord`]s are made back on demand.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use super::RequestRecord;

/// Marks an absent string.
const NONE: u32 = u32::MAX;
const SCHEME: &str = "gemini://";

/// Strings and addresses stored once each.
#[derive(Debug)]
struct Table<T: std::hash::Hash + Eq + Clone> {
    items: Vec<T>,
    ids: HashMap<T, u32>,
}

impl<T: std::hash::Hash + Eq + Clone> Default for Table<T> {
    fn default() -> Self {
        Table {
            items: Vec::new(),
            ids: HashMap::new(),
        }
    }
}

impl<T: std::hash::Hash + Eq + Clone> Table<T> {
    fn id(&mut self, item: T) -> u32 {
        if let Some(&id) = self.ids.get(&item) {
            return id;
        }
        let id = self.items.len() as u32;
        self.items.push(item.clone());
        self.ids.insert(item, id);
        id
    }

    fn get(&self, id: u32) -> Option<&T> {
        self.items.get(id as usize)
    }
}

/// One request, in about 56 bytes plus the request line's path.
#[derive(Debug)]
struct Entry {
    accepted_ns: u64,
    closed_ns: u64,
    peer_ip: u32,
    peer_port: u16,
    status: Option<u8>,
    local: u32,
    sni: u32,
    meta: u32,
    /// The host of a `gemini://HOST...` request line, or NONE (then `rest` is the whole line).
    request_host: u32,
    rest: Box<str>,
}

/// Every request the server answered, in the order the connections closed.
#[derive(Debug, Default)]
pub struct RequestLog {
    entries: Vec<Entry>,
    strings: Table<Arc<str>>,
    ips: Table<IpAddr>,
    locals: Table<SocketAddr>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl RequestLog {
    pub(crate) fn push(&mut self, record: RequestRecord) {
        let mut string = |s: Option<String>| match s {
            Some(s) => self.strings.id(Arc::from(s)),
            None => NONE,
        };
        let sni = string(record.sni);
        let meta = string(record.meta);
        let (request_host, rest) = match record.request.strip_prefix(SCHEME) {
            Some(after) => {
                let end = after.find(['/', '?']).unwrap_or(after.len());
                let host = self.strings.id(Arc::from(&after[..end]));
                (host, Box::from(&after[end..]))
            }
            None => (NONE, record.request.into_boxed_str()),
        };
        let entry = Entry {
            accepted_ns: nanos(record.accepted),
            closed_ns: nanos(record.closed),
            peer_ip: self.ips.id(record.peer.ip()),
            peer_port: record.peer.port(),
            status: record.status,
            local: self.locals.id(record.local),
            sni,
            meta,
            request_host,
            rest,
        };
        self.entries.push(entry);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn string(&self, id: u32) -> Option<&str> {
        self.strings.get(id).map(|s| &**s)
    }

    fn record(&self, entry: &Entry) -> RequestRecord {
        let request = match self.string(entry.request_host) {
            Some(host) => format!("{SCHEME}{host}{}", entry.rest),
            None => entry.rest.to_string(),
        };
        RequestRecord {
            accepted: Duration::from_nanos(entry.accepted_ns),
            closed: Duration::from_nanos(entry.closed_ns),
            peer: SocketAddr::new(
                self.ips
                    .get(entry.peer_ip)
                    .copied()
                    .unwrap_or(IpAddr::from([0, 0, 0, 0])),
                entry.peer_port,
            ),
            local: self
                .locals
                .get(entry.local)
                .copied()
                .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0))),
            sni: self.string(entry.sni).map(str::to_owned),
            request,
            status: entry.status,
            meta: self.string(entry.meta).map(str::to_owned),
        }
    }

    /// The records, made one at a time.
    pub fn iter(&self) -> impl Iterator<Item = RequestRecord> + '_ {
        self.entries.iter().map(|e| self.record(e))
    }

    /// The records from the `start`-th on.
    pub fn since(&self, start: usize) -> Vec<RequestRecord> {
        self.entries
            .get(start..)
            .unwrap_or_default()
            .iter()
            .map(|e| self.record(e))
            .collect()
    }

    /// Requests per host: the SNI name, or the request's host when there was none (connections
    /// without either count under "").
    pub fn per_host(&self) -> BTreeMap<String, u64> {
        let mut counts: HashMap<u32, u64> = HashMap::new();
        for entry in &self.entries {
            let id = if entry.sni != NONE {
                entry.sni
            } else {
                entry.request_host
            };
            *counts.entry(id).or_default() += 1;
        }
        counts
            .into_iter()
            .map(|(id, n)| (self.string(id).unwrap_or("").to_ascii_lowercase(), n))
            .fold(BTreeMap::new(), |mut acc, (host, n)| {
                *acc.entry(host).or_default() += n;
                acc
            })
    }

    /// Writes every record as a JSON line (the fields of [`RequestRecord`]).
    pub fn write_json_lines(&self, out: &mut impl Write) -> io::Result<()> {
        for record in self.iter() {
            serde_json::to_writer(&mut *out, &record)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(request: &str, sni: Option<&str>, status: Option<u8>) -> RequestRecord {
        RequestRecord {
            accepted: Duration::from_nanos(1_234_567),
            closed: Duration::from_millis(9),
            peer: "127.0.0.1:40001".parse().unwrap(),
            local: "127.1.0.2:1965".parse().unwrap(),
            sni: sni.map(str::to_owned),
            request: request.to_string(),
            status,
            meta: status.map(|_| "text/gemini".to_string()),
        }
    }

    #[test]
    fn records_come_back_as_they_went_in_and_count_per_host() {
        let records = [
            record("gemini://a.test/x?y=1", Some("a.test"), Some(20)),
            record("gemini://a.test", Some("A.test"), Some(20)),
            record("gemini://b.test/", None, None),
            record("", None, None),
            record("http://c.test/odd", Some("c.test"), Some(53)),
        ];
        let mut log = RequestLog::default();
        for r in &records {
            log.push(r.clone());
        }
        assert_eq!(log.len(), records.len());
        let back: Vec<RequestRecord> = log.iter().collect();
        for (a, b) in records.iter().zip(&back) {
            assert_eq!(
                serde_json::to_string(a).unwrap(),
                serde_json::to_string(b).unwrap()
            );
        }
        assert_eq!(log.since(3).len(), 2);
        assert!(log.since(9).is_empty());
        let counts = log.per_host();
        assert_eq!(counts["a.test"], 2);
        assert_eq!(counts["b.test"], 1);
        assert_eq!(counts[""], 1);
        let mut out = Vec::new();
        log.write_json_lines(&mut out).unwrap();
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), records.len());
        assert!(
            std::mem::size_of::<Entry>() <= 64,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }
}
