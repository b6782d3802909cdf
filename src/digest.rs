//! Content and certificate fingerprints: SHA-256 as lower-case hex, the one form geode stores
//! and shows (body hashes for change detection and the archive, certificate pins, the
//! frontend's own fingerprint), and the 64-bit key a URL goes by in the index and in the
//! authority file. Pure.

/// Lower-case hex SHA-256 of `bytes`.
///
/// ```
/// assert_eq!(
///     geode::digest::sha256_hex(b"abc"),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, bytes).as_ref())
}

/// The key of a URL in the index (its `url_hash` field), in the authority file and in the link
/// graph: the first 8 bytes of the SHA-256 of the normalised URL, read big-endian.
pub fn url_hash(url: &str) -> u64 {
    let d = ring::digest::digest(&ring::digest::SHA256, url.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&d.as_ref()[..8]);
    u64::from_be_bytes(first)
}

/// Lower-case hex of any bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_of_every_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(hex(&[]), "");
        assert_eq!(sha256_hex(b"").len(), 64);
    }
}
