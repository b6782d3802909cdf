//! The TLS identity of `geode serve`: a certificate and key from PEM files the operator names,
//! or a self-signed pair made with rcgen on first start and kept in the data directory, so the
//! fingerprint Gemini clients pinned on first use (TOFU) stays the same across restarts.
//!
//! The kept pair lives in `<data>/serve/`: `cert.pem`, `key.pem` (mode 0600) and `hostname`,
//! the name it was made for. It is reused while `--hostname` matches; for another host name a new
//! pair replaces it, with a warning (clients that pinned the old one will complain). Its
//! subjectAltName is the host name plus the specific IP addresses listened on.
//!
//! Not here: the rustls server configuration (`serve/mod.rs`) and client certificates, which
//! geode neither asks for nor checks.

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::CertifiedKey;

/// Where the certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertSource {
    /// PEM files given by the operator: a certificate chain and its private key.
    Files { cert: PathBuf, key: PathBuf },
    /// A self-signed pair kept in this directory (made when missing or for another host).
    SelfSigned { dir: PathBuf },
}

/// Errors loading or making the certificate.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("reading {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{0}: no certificate found (expected PEM \"BEGIN CERTIFICATE\")")]
    NoCertificate(PathBuf),
    #[error("the key does not fit the certificate, or is of a kind rustls cannot use: {0}")]
    Unusable(String),
    #[error("making a certificate for {host:?}: {message}")]
    Generate { host: String, message: String },
    #[error("writing {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// A loaded identity and what to tell the operator about it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub key: Arc<CertifiedKey>,
    /// SHA-256 of the leaf certificate, lower-case hex: what TOFU clients pin.
    pub fingerprint: String,
    /// Where it came from: "PATH" for files, "PATH (new)" for a pair made just now.
    pub origin: String,
}

const CERT_FILE: &str = "cert.pem";
const KEY_FILE: &str = "key.pem";
const HOSTNAME_FILE: &str = "hostname";

/// Loads the identity for `hostname`. `ips` are the listen addresses, added to a new
/// certificate's names when they are specific (not 0.0.0.0 or ::).
pub fn load_or_create(
    source: &CertSource,
    hostname: &str,
    ips: &[IpAddr],
    provider: &CryptoProvider,
) -> Result<Identity, CertError> {
    match source {
        CertSource::Files { cert, key } => {
            let key = load_files(cert, key, provider)?;
            Ok(identity(key, cert.display().to_string()))
        }
        CertSource::SelfSigned { dir } => {
            let cert = dir.join(CERT_FILE);
            let key = dir.join(KEY_FILE);
            match kept_for(dir) {
                Some(name) if name == hostname => match load_files(&cert, &key, provider) {
                    Ok(loaded) => return Ok(identity(loaded, cert.display().to_string())),
                    Err(e) => tracing::warn!(
                        "the kept certificate cannot be used ({e}); making a new one: clients \
                         that pinned the old one will warn"
                    ),
                },
                Some(name) => tracing::warn!(
                    "the kept certificate in {} was made for {name:?}, not {hostname:?}; making \
                     a new one: clients that pinned the old one will warn",
                    dir.display()
                ),
                None => {}
            }
            let made = generate(hostname, ips)?;
            save(dir, hostname, &made)?;
            let key = certified(&made.cert_der, made.key_der, provider)?;
            Ok(identity(key, format!("{} (new)", cert.display())))
        }
    }
}

fn identity(key: CertifiedKey, origin: String) -> Identity {
    let fingerprint = key
        .cert
        .first()
        .map(|der| crate::digest::sha256_hex(der))
        .unwrap_or_default();
    Identity {
        key: Arc::new(key),
        fingerprint,
        origin,
    }
}

/// The host name the kept pair was made for, when all three files are there.
fn kept_for(dir: &Path) -> Option<String> {
    if !dir.join(CERT_FILE).is_file() || !dir.join(KEY_FILE).is_file() {
        return None;
    }
    let name = std::fs::read_to_string(dir.join(HOSTNAME_FILE)).ok()?;
    Some(name.trim().to_string())
}

fn load_files(
    cert: &Path,
    key: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, CertError> {
    let read_err = |path: &Path, e: &dyn std::fmt::Display| CertError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| read_err(cert, &e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| read_err(cert, &e))?;
    if chain.is_empty() {
        return Err(CertError::NoCertificate(cert.to_path_buf()));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| read_err(key, &e))?;
    CertifiedKey::from_der(chain, private, provider).map_err(|e| CertError::Unusable(e.to_string()))
}

fn certified(
    cert_der: &[u8],
    key_der: Vec<u8>,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, CertError> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key_der));
    CertifiedKey::from_der(vec![CertificateDer::from(cert_der.to_vec())], key, provider)
        .map_err(|e| CertError::Unusable(e.to_string()))
}

/// A freshly made pair, in both encodings.
struct Made {
    cert_pem: String,
    cert_der: Vec<u8>,
    key_pem: String,
    key_der: Vec<u8>,
}

fn generate(hostname: &str, ips: &[IpAddr]) -> Result<Made, CertError> {
    let fail = |e: rcgen::Error| CertError::Generate {
        host: hostname.to_string(),
        message: e.to_string(),
    };
    let mut names = vec![hostname.to_string()];
    for ip in ips {
        let name = ip.to_canonical().to_string();
        if !ip.is_unspecified() && !names.contains(&name) {
            names.push(name);
        }
    }
    let key = rcgen::KeyPair::generate().map_err(fail)?;
    let mut params = rcgen::CertificateParams::new(names).map_err(fail)?;
    // Clients show the subject in their TOFU prompts; rcgen's default subject says nothing.
    let mut subject = rcgen::DistinguishedName::new();
    subject.push(rcgen::DnType::CommonName, hostname);
    params.distinguished_name = subject;
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok(Made {
        cert_pem: cert.pem(),
        cert_der: cert.der().to_vec(),
        key_pem: key.serialize_pem(),
        key_der: key.serialize_der(),
    })
}

/// Writes the pair: key first (0600), then certificate, then the host name, each through a
/// temporary file and a rename so a crash never leaves half a file.
fn save(dir: &Path, hostname: &str, made: &Made) -> Result<(), CertError> {
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |error| CertError::Write { path, error }
    };
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    write_atomically(&dir.join(KEY_FILE), made.key_pem.as_bytes(), 0o600)?;
    write_atomically(&dir.join(CERT_FILE), made.cert_pem.as_bytes(), 0o644)?;
    write_atomically(
        &dir.join(HOSTNAME_FILE),
        format!("{hostname}\n").as_bytes(),
        0o644,
    )
}

fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CertError> {
    let err = |error| CertError::Write {
        path: path.to_path_buf(),
        error,
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options.open(&tmp).map_err(err)?;
    // The mode given to open applies only to a new file: make sure a leftover keeps no wider one.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(err)?;
    }
    file.write_all(bytes).map_err(err)?;
    file.sync_all().map_err(err)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> CryptoProvider {
        rustls::crypto::ring::default_provider()
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn a_self_signed_pair_is_made_once_kept_and_replaced_for_another_host() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("serve");
        let source = CertSource::SelfSigned { dir: dir.clone() };
        let ips: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap(), "0.0.0.0".parse().unwrap()];
        let first = load_or_create(&source, "geode.test", &ips, &provider()).unwrap();
        assert!(first.origin.ends_with("(new)"), "{}", first.origin);
        assert_eq!(first.fingerprint.len(), 64);
        let der = first.key.cert[0].as_ref();
        assert!(contains(der, b"geode.test"));
        assert!(contains(der, &[127, 0, 0, 1]), "the listen IP is a SAN");

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }

        let again = load_or_create(&source, "geode.test", &ips, &provider()).unwrap();
        assert_eq!(again.fingerprint, first.fingerprint, "kept across restarts");
        assert!(!again.origin.ends_with("(new)"));

        let other = load_or_create(&source, "other.test", &ips, &provider()).unwrap();
        assert_ne!(other.fingerprint, first.fingerprint);
        assert!(contains(other.key.cert[0].as_ref(), b"other.test"));
        assert_eq!(
            std::fs::read_to_string(dir.join(HOSTNAME_FILE)).unwrap(),
            "other.test\n"
        );
        // No temporary files left behind.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn a_damaged_kept_pair_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let source = CertSource::SelfSigned {
            dir: tmp.path().to_path_buf(),
        };
        let first = load_or_create(&source, "geode.test", &[], &provider()).unwrap();
        std::fs::write(tmp.path().join(KEY_FILE), "garbage").unwrap();
        let second = load_or_create(&source, "geode.test", &[], &provider()).unwrap();
        assert_ne!(first.fingerprint, second.fingerprint);
    }

    #[test]
    fn files_given_by_the_operator_are_loaded_or_refused_with_a_reason() {
        let tmp = tempfile::tempdir().unwrap();
        let made = generate("files.test", &[]).unwrap();
        let cert = tmp.path().join("c.pem");
        let key = tmp.path().join("k.pem");
        std::fs::write(&cert, &made.cert_pem).unwrap();
        std::fs::write(&key, &made.key_pem).unwrap();
        let files = CertSource::Files {
            cert: cert.clone(),
            key: key.clone(),
        };
        let loaded = load_or_create(&files, "files.test", &[], &provider()).unwrap();
        assert_eq!(loaded.origin, cert.display().to_string());

        // A key of another pair, a missing file, an empty certificate file.
        let other = generate("other.test", &[]).unwrap();
        std::fs::write(&key, &other.key_pem).unwrap();
        assert!(matches!(
            load_or_create(&files, "files.test", &[], &provider()),
            Err(CertError::Unusable(_))
        ));
        let missing = CertSource::Files {
            cert: tmp.path().join("absent.pem"),
            key,
        };
        assert!(matches!(
            load_or_create(&missing, "files.test", &[], &provider()),
            Err(CertError::Read { .. })
        ));
        std::fs::write(&cert, "").unwrap();
        assert!(matches!(
            load_or_create(&files, "files.test", &[], &provider()),
            Err(CertError::NoCertificate(_))
        ));
    }

    #[test]
    fn a_name_rcgen_cannot_encode_is_an_error() {
        assert!(matches!(
            generate("bad\u{e9}name", &[]),
            Err(CertError::Generate { .. })
        ));
    }
}
