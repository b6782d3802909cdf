//! What both halves of the fixture's answering share: the [`Response`] type, and the file
//! helpers (a path kept inside its host directory, a MIME type from a file name). The file
//! server ([`super::files`]) and the dynamic routes ([`super::routes`]) both build on it, so
//! neither depends on the other's internals: `files` consults `routes`, never the reverse.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A complete answer: what goes first, the body, and how long to wait before sending anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Response {
    pub head: Head,
    /// Empty unless the answer is a success.
    pub body: Vec<u8>,
    /// Pause between reading the request and sending the header (a route's `delay`).
    pub delay: Duration,
}

/// The start of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Head {
    /// A well-formed header: `status meta CRLF`.
    Status { status: u8, meta: String },
    /// A line sent verbatim, CRLF appended: deliberately broken headers (`raw` routes).
    Raw(String),
    /// No header at all: the connection closes right after the request (`close` routes).
    Nothing,
}

impl Response {
    pub(crate) fn new(status: u8, meta: impl Into<String>) -> Response {
        Response {
            head: Head::Status {
                status,
                meta: meta.into(),
            },
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub(crate) fn success(meta: &str, body: Vec<u8>) -> Response {
        Response {
            body,
            ..Response::new(20, meta)
        }
    }

    pub(crate) fn raw(line: &str) -> Response {
        Response {
            head: Head::Raw(line.to_string()),
            ..Response::new(20, "")
        }
    }

    pub(crate) fn nothing() -> Response {
        Response {
            head: Head::Nothing,
            ..Response::new(20, "")
        }
    }

    pub(crate) fn bad_request(why: &str) -> Response {
        Response::new(59, why)
    }

    pub(crate) fn temporary_failure() -> Response {
        Response::new(40, "Temporary failure")
    }

    pub(crate) fn not_found() -> Response {
        Response::new(51, "Not found")
    }

    /// The header line, CRLF included; `None` when nothing is to be sent.
    pub(crate) fn header_line(&self) -> Option<String> {
        match &self.head {
            Head::Status { status, meta } => Some(format!("{status} {meta}\r\n")),
            Head::Raw(line) => Some(format!("{line}\r\n")),
            Head::Nothing => None,
        }
    }

    /// The status for the request log: a raw header's leading digits if they make a number
    /// below 256 (`99 x` is 99, `7 x` is 7, `hello` has none).
    pub(crate) fn logged_status(&self) -> Option<u8> {
        match &self.head {
            Head::Status { status, .. } => Some(*status),
            Head::Raw(line) => {
                let digits =
                    line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                line[..digits].parse().ok()
            }
            Head::Nothing => None,
        }
    }

    /// The meta for the request log: for a raw header, the text after its leading digits and one
    /// space, or the whole line when it does not start with a number.
    pub(crate) fn logged_meta(&self) -> Option<String> {
        match &self.head {
            Head::Status { meta, .. } => Some(meta.clone()),
            Head::Raw(line) => {
                let rest = line.trim_start_matches(|c: char| c.is_ascii_digit());
                if rest.len() == line.len() {
                    Some(line.clone())
                } else {
                    Some(rest.strip_prefix(' ').unwrap_or(rest).to_string())
                }
            }
            Head::Nothing => None,
        }
    }
}

/// The canonical form of `path` if it exists and stays under `host_dir` once symlinks are resolved.
pub(crate) fn contained(host_dir: &Path, path: &Path) -> Option<PathBuf> {
    let canonical = fs::canonicalize(path).ok()?;
    canonical.starts_with(host_dir).then_some(canonical)
}

/// MIME type from the file name; unknown extensions are opaque bytes.
pub(crate) fn mime_type(path: &Path) -> &'static str {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    // Multi-part extensions first, then the last extension alone.
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        return "application/gzip";
    }
    let ext = name.rsplit_once('.').map(|(_, ext)| ext).unwrap_or("");
    match ext {
        "gmi" | "gemini" => "text/gemini",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "xml" => "application/xml",
        "atom" => "application/atom+xml",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        _ => "application/octet-stream",
    }
}
