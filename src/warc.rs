//! A WARC 1.1 writer for `geode export --warc`: a `warcinfo` record, then one `response` record
//! per archived URL, each compressed as its own gzip member (the `.warc.gz` convention, so a
//! reader can seek to any record).
//!
//! A Gemini response record's block is what the server sent: the header line (`20 text/gemini`,
//! CRLF) and the body; `Content-Type: application/gemini; msgtype=response` says so. The
//! payload digest is the SHA-1 of that block in base32 (`sha1:...`), as WARC tools expect.
//!
//! Not here: reading the archive (the frontier does) or choosing what to export.

use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use flate2::write::GzEncoder;
use flate2::Compression;

/// Writes WARC records to `W`.
pub struct WarcWriter<W: Write> {
    out: W,
    records: u64,
}

impl<W: Write> WarcWriter<W> {
    /// Starts a WARC file with a `warcinfo` record naming the software, dated `now` (unix
    /// seconds: the caller reads the clock).
    pub fn new(out: W, now: i64) -> std::io::Result<Self> {
        let mut writer = WarcWriter { out, records: 0 };
        let info = format!(
            "software: geode {}\r\nformat: WARC File Format 1.1\r\n\
             conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n",
            env!("CARGO_PKG_VERSION")
        );
        writer.record(
            "warcinfo",
            None,
            now,
            "application/warc-fields",
            info.as_bytes(),
        )?;
        Ok(writer)
    }

    /// Writes the response a Gemini server gave for `uri` at `fetched_at` (unix seconds):
    /// `header` is its header line without CRLF, `body` what followed.
    pub fn response(
        &mut self,
        uri: &str,
        fetched_at: i64,
        header: &str,
        body: &[u8],
    ) -> std::io::Result<()> {
        let mut block = Vec::with_capacity(header.len() + 2 + body.len());
        block.extend_from_slice(header.as_bytes());
        block.extend_from_slice(b"\r\n");
        block.extend_from_slice(body);
        self.record(
            "response",
            Some(uri),
            fetched_at,
            "application/gemini; msgtype=response",
            &block,
        )
    }

    fn record(
        &mut self,
        kind: &str,
        uri: Option<&str>,
        at: i64,
        content_type: &str,
        block: &[u8],
    ) -> std::io::Result<()> {
        let digest = sha1_base32(block);
        let mut head = format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{}>\r\nWARC-Date: {}\r\n",
            uuid::Uuid::new_v4(),
            warc_date(at)
        );
        if let Some(uri) = uri {
            // A URI holds no CR or LF (geode normalises every URL it stores).
            head.push_str(&format!("WARC-Target-URI: {uri}\r\n"));
            head.push_str(&format!("WARC-Payload-Digest: sha1:{digest}\r\n"));
        }
        head.push_str(&format!(
            "WARC-Block-Digest: sha1:{digest}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            block.len()
        ));
        let mut gz = GzEncoder::new(&mut self.out, Compression::default());
        gz.write_all(head.as_bytes())?;
        gz.write_all(block)?;
        gz.write_all(b"\r\n\r\n")?;
        gz.finish()?;
        self.records += 1;
        Ok(())
    }

    /// Records written, the `warcinfo` included.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// SHA-1 in base32, the digest WARC tools read.
fn sha1_base32(data: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, data);
    data_encoding::BASE32.encode(digest.as_ref())
}

/// A WARC date: `2024-05-01T12:00:00Z`.
pub fn warc_date(unix: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_secs(unix.max(0) as u64);
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// The gzip members of a WARC file, decompressed one by one.
    fn members(bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let mut gz = flate2::bufread::GzDecoder::new(rest);
            let mut text = Vec::new();
            gz.read_to_end(&mut text).unwrap();
            rest = gz.into_inner();
            out.push(String::from_utf8_lossy(&text).into_owned());
        }
        out
    }

    #[test]
    fn records_are_gzip_members_with_the_fields_warc_readers_need() {
        let mut w = WarcWriter::new(Vec::new(), 1_700_000_000).unwrap();
        w.response(
            "gemini://a.test/",
            1_700_000_000,
            "20 text/gemini",
            b"# Hello\n",
        )
        .unwrap();
        assert_eq!(w.records(), 2);
        let bytes = w.finish().unwrap();
        let records = members(&bytes);
        assert_eq!(records.len(), 2);
        assert!(records[0].starts_with("WARC/1.1\r\nWARC-Type: warcinfo\r\n"));
        let r = &records[1];
        assert!(r.starts_with("WARC/1.1\r\nWARC-Type: response\r\n"), "{r}");
        assert!(r.contains("\r\nWARC-Target-URI: gemini://a.test/\r\n"));
        assert!(r.contains("\r\nWARC-Date: 2023-11-14T22:13:20Z\r\n"));
        assert!(r.contains("\r\nContent-Length: 24\r\n"));
        // sha1("20 text/gemini\r\n# Hello\n") in base32.
        let digest = sha1_base32(b"20 text/gemini\r\n# Hello\n");
        assert_eq!(digest.len(), 32);
        assert!(r.contains(&format!("\r\nWARC-Payload-Digest: sha1:{digest}\r\n")));
        assert!(
            r.ends_with("\r\n\r\n20 text/gemini\r\n# Hello\n\r\n\r\n"),
            "{r:?}"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(warc_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(warc_date(1_709_251_200), "2024-03-01T00:00:00Z");
    }
}
