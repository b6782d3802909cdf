//! A real web server for the HTTP tests: Debian's nginx, run from a scratch directory on a
//! loopback address, with a config each test writes, and its access log (start time, duration,
//! status, bytes) for politeness checks. When nginx is not installed the tests that need it say
//! SKIPPED and pass (CI installs it: .ci/run).

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian puts nginx; `PATH` may not hold `/usr/sbin`.
pub fn nginx_binary() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// A running nginx; killed when dropped.
pub struct Nginx {
    child: Child,
    pub dir: tempfile::TempDir,
    pub addr: SocketAddr,
}

/// One line of the access log.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Seconds since the epoch when the request arrived.
    pub start: f64,
    /// Seconds nginx spent on it.
    pub took: f64,
    pub status: u16,
    pub bytes: u64,
    pub request: String,
    pub agent: String,
}

/// TLS for a server: PEM certificate chain and key.
pub struct Tls {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Nginx {
    /// Starts nginx on `ip` (a free port) serving `root`, with `locations` inside its `server`
    /// block, over TLS when `tls` is given. `None` when nginx is not installed.
    pub fn start(ip: IpAddr, root: &Path, locations: &str, tls: Option<&Tls>) -> Option<Nginx> {
        let binary = nginx_binary()?;
        for _attempt in 0..5 {
            let port = TcpListener::bind((ip, 0))
                .expect("a free port")
                .local_addr()
                .unwrap()
                .port();
            let addr = SocketAddr::new(ip, port);
            let dir = tempfile::tempdir().expect("scratch directory");
            let prefix = dir.path();
            std::fs::create_dir_all(prefix.join("tmp")).unwrap();
            let (listen, ssl) = match tls {
                Some(tls) => {
                    std::fs::write(prefix.join("cert.pem"), &tls.cert_pem).unwrap();
                    std::fs::write(prefix.join("key.pem"), &tls.key_pem).unwrap();
                    (
                        // HTTP/2 where the client offers it (ALPN), HTTP/1.1 otherwise.
                        format!("{addr} ssl http2"),
                        format!(
                            "ssl_certificate {p}/cert.pem; ssl_certificate_key {p}/key.pem;",
                            p = prefix.display()
                        ),
                    )
                }
                None => (addr.to_string(), String::new()),
            };
            let conf = format!(
                r#"
worker_processes 1;
pid {p}/nginx.pid;
error_log {p}/error.log;
events {{ worker_connections 256; }}
http {{
    log_format timed '$msec $request_time $status $body_bytes_sent "$request" "$http_user_agent"';
    access_log {p}/access.log timed;
    client_body_temp_path {p}/tmp/body;
    proxy_temp_path {p}/tmp/proxy;
    fastcgi_temp_path {p}/tmp/fastcgi;
    uwsgi_temp_path {p}/tmp/uwsgi;
    scgi_temp_path {p}/tmp/scgi;
    types {{ text/html html; text/plain txt; text/gemini gmi; image/png png; }}
    default_type application/octet-stream;
    etag on;
    gzip on; gzip_min_length 1; gzip_types text/plain text/gemini;
    server {{
        listen {listen};
        server_name _;
        root {root};
        {ssl}
        {locations}
    }}
}}
"#,
                p = prefix.display(),
                root = root.display(),
            );
            std::fs::write(prefix.join("nginx.conf"), conf).unwrap();
            let mut command = Command::new(&binary);
            command
                .arg("-p")
                .arg(prefix)
                .arg("-c")
                .arg(prefix.join("nginx.conf"))
                .args(["-g", "daemon off;"])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // Running as root, nginx hands requests to workers of another user, who could not
            // read a test's private temporary directory.
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } == 0 {
                command.args(["-g", "user root;"]);
            }
            let mut child = command.spawn().expect("nginx starts");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    return Some(Nginx { child, dir, addr });
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            // The port may have been taken between the probe and nginx's bind: try another.
        }
        panic!("nginx did not start on {ip}");
    }

    /// The requests nginx has logged so far.
    pub fn hits(&self) -> Vec<Hit> {
        let log = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        log.lines()
            .filter_map(|line| {
                let mut quoted = line.split('"');
                let head = quoted.next()?;
                let request = quoted.next()?.to_string();
                let agent = quoted.nth(1).unwrap_or("").to_string();
                let mut fields = head.split_whitespace();
                Some(Hit {
                    start: fields.next()?.parse().ok()?,
                    took: fields.next()?.parse().ok()?,
                    status: fields.next()?.parse().ok()?,
                    bytes: fields.next()?.parse().ok()?,
                    request,
                    agent,
                })
            })
            .collect()
    }
}

impl Nginx {
    /// The first logged request that `matches`, waiting up to 5 s for nginx to write it (it
    /// logs a request once it has finished it).
    pub fn wait_for(&self, matches: impl Fn(&Hit) -> bool) -> Hit {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(hit) = self.hits().into_iter().find(&matches) {
                return hit;
            }
            assert!(Instant::now() < deadline, "not logged: {:?}", self.hits());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Says why a test does nothing.
pub fn skip(test: &str) {
    eprintln!("SKIPPED {test}: nginx is not installed (Debian package nginx-light)");
}

/// A private certificate authority and a server certificate it signed for `names`.
pub fn private_ca(
    names: &[&str],
    ips: &[IpAddr],
) -> (Tls, rustls::pki_types::CertificateDer<'static>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "geode test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    for ip in ips {
        params.subject_alt_names.push(SanType::IpAddress(*ip));
    }
    let cert = params.signed_by(&key, &issuer).unwrap();
    (
        Tls {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        },
        ca.der().clone(),
    )
}
