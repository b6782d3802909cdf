//! One client connection of `geode serve`, from accept to close: the TLS handshake and the
//! request line read in the pending phase (short time limits, one fixed 1026-byte buffer, the
//! pending budget), then the answer under the `--max-connections` permit, and a bounded drain
//! before the close so the client reads the whole response.

use super::*;

/// A response: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u8,
    pub meta: String,
    pub body: Vec<u8>,
}

impl Response {
    pub(super) fn header(status: u8, meta: impl Into<String>) -> Response {
        Response {
            status,
            meta: meta.into(),
            body: Vec::new(),
        }
    }

    pub(super) fn gemtext(body: String) -> Response {
        Response {
            status: 20,
            meta: "text/gemini; charset=utf-8; lang=en".to_string(),
            body: body.into_bytes(),
        }
    }

    pub(super) fn busy() -> Response {
        Response::header(40, "Server busy, try again in a moment")
    }
}

/// What the pending phase of a connection came to: the TLS stream and the bytes of the request
/// (or `None` when the client never finished its handshake or failed while sending).
type Received = Option<(
    tokio_rustls::server::TlsStream<TcpStream>,
    Box<[u8; MAX_REQUEST + 2]>,
    Option<Read>,
)>;

/// The pending phase: TLS handshake, then the request line, each within its time limit. The
/// request is `None` when its time ran out (answered 59).
async fn receive(shared: &Shared, tcp: TcpStream, peer: SocketAddr) -> Received {
    // Only the Gemini listeners' connections come here, and they exist only with TLS.
    let acceptor = shared.acceptor.as_ref()?;
    let mut stream =
        match tokio::time::timeout(shared.timeouts.handshake, acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                tracing::debug!("{peer}: handshake failed: {e}");
                return None;
            }
            Err(_) => {
                tracing::debug!("{peer}: handshake timeout");
                return None;
            }
        };
    let mut buf = Box::new([0u8; MAX_REQUEST + 2]);
    let read = tokio::time::timeout(
        shared.timeouts.request,
        read_request(&mut stream, &mut buf[..]),
    );
    match read.await {
        Err(_) => Some((stream, buf, None)),
        Ok(Err(e)) => {
            tracing::debug!("{peer}: reading the request: {e}");
            None
        }
        Ok(Ok(read)) => Some((stream, buf, Some(read))),
    }
}

pub(super) async fn connection(
    shared: &Shared,
    authority: &Authority,
    tcp: TcpStream,
    peer: SocketAddr,
    mut pending: PendingSlot,
) {
    let started = Instant::now();
    // Responses are small; do not let Nagle hold back the last segment.
    let _ = tcp.set_nodelay(true);
    let received = tokio::select! {
        () = pending.evicted() => {
            tracing::debug!("{peer}: closed before its request to make room for another client");
            return;
        }
        received = receive(shared, tcp, peer) => received,
    };
    let Some((mut stream, buf, read)) = received else {
        return;
    };
    // A place among the connections being answered; still evictable while waiting for it.
    let _answering = tokio::select! {
        () = pending.evicted() => {
            tracing::debug!("{peer}: closed while waiting to be answered, to make room");
            return;
        }
        place = Arc::clone(&shared.answering).acquire_owned() => match place {
            Ok(place) => place,
            Err(_) => return,
        },
    };
    drop(pending);
    let (framing, unread) = match read {
        None => (Framing::TimedOut, false),
        Some(read) => read.framing(&buf[..]),
    };
    let request_text = match framing {
        Framing::Line(line) => String::from_utf8_lossy(line).into_owned(),
        _ => String::new(),
    };

    let response = match shared.limiter.check(peer.ip(), Instant::now()) {
        Err(wait) => Response::header(44, wait.to_string()),
        Ok(()) => match request::parse(framing, authority) {
            Err(reject) => Response::header(reject.status(), reject.message()),
            Ok(request) => respond(shared, request.route).await,
        },
    };

    let write = async {
        let mut head = format!("{} {}\r\n", response.status, response.meta).into_bytes();
        head.extend_from_slice(&response.body);
        stream.write_all(&head).await?;
        // close_notify, then FIN: the client can tell a complete body from a cut one.
        stream.shutdown().await
    };
    match tokio::time::timeout(shared.timeouts.write, write).await {
        Ok(Ok(())) if unread => drain(&mut stream).await,
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!("{peer}: writing the response: {e}"),
        Err(_) => tracing::debug!("{peer}: too slow to read the response"),
    }
    tracing::debug!(
        "{peer} {request_text:?} -> {} {} ({} bytes, {:.1} ms)",
        response.status,
        response.meta,
        response.body.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
}

/// How the request arrived, as positions in the read buffer.
enum Read {
    /// A line ending in CRLF at `end` (exclusive of CRLF); `trailing` when bytes followed.
    Line {
        end: usize,
        trailing: bool,
    },
    TooLong,
    /// The client closed, or sent a bare LF, before CRLF.
    Unterminated,
}

impl Read {
    fn framing(self, buf: &[u8]) -> (Framing<'_>, bool) {
        match self {
            Read::Line { end, trailing } => (Framing::Line(&buf[..end]), trailing),
            Read::TooLong => (Framing::TooLong, true),
            Read::Unterminated => (Framing::Unterminated, false),
        }
    }
}

/// Reads into the caller's fixed buffer (the longest legal request plus CRLF), so a client
/// cannot make the server hold more than that.
async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut [u8],
) -> std::io::Result<Read> {
    let mut filled = 0;
    loop {
        if let Some(lf) = buf[..filled].iter().position(|&b| b == b'\n') {
            if lf == 0 || buf[lf - 1] != b'\r' {
                return Ok(Read::Unterminated);
            }
            return Ok(Read::Line {
                end: lf - 1,
                trailing: lf + 1 < filled,
            });
        }
        if filled == buf.len() {
            return Ok(Read::TooLong);
        }
        match stream.read(&mut buf[filled..]).await? {
            0 => return Ok(Read::Unterminated),
            n => filled += n,
        }
    }
}

/// Closing a socket with unread bytes makes the kernel send RST, and the client may lose the
/// answer it has not read yet (typically the 59 for an over-long request). Reading the rest for
/// a moment lets the client see the answer and close first.
pub(super) async fn drain<S: AsyncRead + Unpin>(stream: &mut S) {
    let mut sink = [0u8; 4096];
    let swallow = async {
        let mut total = 0usize;
        while total < 1 << 20 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), swallow).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_are_framed_by_crlf_within_the_fixed_buffer() {
        let long = vec![b'a'; 2000];
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"gemini://h/\r\n".to_vec(), "line gemini://h/"),
            (b"gemini://h/\r\nextra".to_vec(), "line+ gemini://h/"),
            (b"gemini://h/\n".to_vec(), "unterminated"),
            (b"gemini://h/".to_vec(), "unterminated"),
            (b"\r\n".to_vec(), "line "),
            (long, "too long"),
        ];
        for (input, want) in cases {
            let mut reader = &input[..];
            let mut buf = [0u8; MAX_REQUEST + 2];
            let read = read_request(&mut reader, &mut buf).await.unwrap();
            let got = match read.framing(&buf) {
                (Framing::Line(l), false) => format!("line {}", String::from_utf8_lossy(l)),
                (Framing::Line(l), true) => format!("line+ {}", String::from_utf8_lossy(l)),
                (Framing::TooLong, _) => "too long".to_string(),
                (Framing::Unterminated, _) => "unterminated".to_string(),
                (Framing::TimedOut, _) => "timeout".to_string(),
            };
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&input));
        }
        // Exactly 1024 bytes plus CRLF fits; one more byte does not.
        for (len, ok) in [(MAX_REQUEST, true), (MAX_REQUEST + 1, false)] {
            let mut input = vec![b'a'; len];
            input.extend_from_slice(b"\r\n");
            let mut reader = &input[..];
            let mut buf = [0u8; MAX_REQUEST + 2];
            let read = read_request(&mut reader, &mut buf).await.unwrap();
            assert_eq!(matches!(read, Read::Line { .. }), ok, "{len}");
        }
    }
}
