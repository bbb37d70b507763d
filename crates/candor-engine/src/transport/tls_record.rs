//! TLS application records sealed and opened in place, in buffers the connection owns, with the
//! keys rustls hands over once its handshake is done (`rustls::kernel`, the API made for kTLS).
//! rustls's own record layer allocates a buffer for every record it encrypts (its
//! `MessageEncrypter` returns an owned payload, in the buffered and the unbuffered API alike)
//! and, in both APIs, one for every record of plaintext it receives; a load generator sends and
//! receives records all the time, so it protects them itself and allocates nothing per request.
//! Only the AEAD constructions of the suites rustls's `ring` provider offers are needed: AES-GCM
//! and ChaCha20-Poly1305, TLS 1.3 (RFC 8446 5.2-5.3) and TLS 1.2 (RFC 5288, RFC 7905).

use ring::aead;
use rustls::ConnectionTrafficSecrets;
use std::ops::Range;

/// A record's header: content type, legacy version, length.
pub const HEADER: usize = 5;
/// The most plaintext one record carries (2^14).
pub const MAX_PLAINTEXT: usize = 16_384;
/// The most ciphertext a record may carry (TLS 1.2's bound; TLS 1.3's is 256 over plaintext).
pub const MAX_CIPHERTEXT: usize = MAX_PLAINTEXT + 2_048;
const TAG: usize = 16;
/// TLS 1.2 AES-GCM carries the last 8 bytes of each record's nonce before its ciphertext.
const EXPLICIT_NONCE: usize = 8;

pub const ALERT: u8 = 21;
pub const HANDSHAKE: u8 = 22;
pub const APPLICATION_DATA: u8 = 23;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Version {
    Tls12,
    Tls13,
}

/// How a record's nonce is made from the key's IV and the record's sequence number.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NonceKind {
    /// IV XOR sequence number, nothing on the wire (TLS 1.3; TLS 1.2 ChaCha20-Poly1305).
    Xor,
    /// TLS 1.2 AES-GCM: a 4-byte salt and 8 explicit bytes sent in the record (rustls's
    /// extracted IV is the salt and the start of its explicit part, XORed with the sequence
    /// number as for TLS 1.3, and that is what is sent).
    Explicit,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the negotiated TLS cipher suite is not one candor protects records for")]
    UnsupportedSuite,
    #[error("a TLS record failed to decrypt")]
    Decrypt,
    #[error("a TLS record is larger than TLS allows")]
    Oversized,
    #[error("a TLS record is malformed")]
    Malformed,
}

/// One direction's record protection: the key, its IV and the next sequence number.
pub struct RecordKey {
    key: aead::LessSafeKey,
    iv: [u8; aead::NONCE_LEN],
    nonce: NonceKind,
    version: Version,
    seq: u64,
}

impl RecordKey {
    /// The protection rustls extracted for one direction, starting at sequence number `seq`.
    pub fn new(
        version: Version,
        secrets: ConnectionTrafficSecrets,
        seq: u64,
    ) -> Result<RecordKey, RecordError> {
        let gcm = match version {
            Version::Tls12 => NonceKind::Explicit,
            Version::Tls13 => NonceKind::Xor,
        };
        let (algorithm, key, iv, nonce) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv, gcm),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv, gcm),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv, NonceKind::Xor)
            }
            _ => return Err(RecordError::UnsupportedSuite),
        };
        let key = aead::UnboundKey::new(algorithm, key.as_ref())
            .map_err(|_| RecordError::UnsupportedSuite)?;
        let iv = iv
            .as_ref()
            .try_into()
            .map_err(|_| RecordError::UnsupportedSuite)?;
        Ok(RecordKey {
            key: aead::LessSafeKey::new(key),
            iv,
            nonce,
            version,
            seq,
        })
    }

    /// The records sealed (or opened) with this key so far, counting those before the handover.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Bytes a record adds to the plaintext it carries.
    pub fn overhead(&self) -> usize {
        HEADER
            + TAG
            + match (self.version, self.nonce) {
                // The real content type, inside the encryption.
                (Version::Tls13, _) => 1,
                (Version::Tls12, NonceKind::Explicit) => EXPLICIT_NONCE,
                (Version::Tls12, NonceKind::Xor) => 0,
            }
    }

    fn nonce(&self, seq: u64) -> [u8; aead::NONCE_LEN] {
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
            *n ^= s;
        }
        nonce
    }

    /// Writes one record of content type `typ` carrying `plaintext` (at most [`MAX_PLAINTEXT`])
    /// at the start of `out`, which must hold `plaintext.len() + overhead()` bytes; returns the
    /// record's length.
    pub fn seal(
        &mut self,
        typ: u8,
        plaintext: &[u8],
        out: &mut [u8],
    ) -> Result<usize, RecordError> {
        let total = plaintext.len() + self.overhead();
        if plaintext.len() > MAX_PLAINTEXT || out.len() < total {
            return Err(RecordError::Oversized);
        }
        let seq = self.seq;
        let nonce = self.nonce(seq);
        let length = ((total - HEADER) as u16).to_be_bytes();
        // TLS 1.3's additional data is the record header; TLS 1.2's is longer.
        let mut aad = [0u8; 13];
        let (outer, body, aad) = match self.version {
            Version::Tls13 => {
                aad[..HEADER].copy_from_slice(&[APPLICATION_DATA, 3, 3, length[0], length[1]]);
                out[HEADER..HEADER + plaintext.len()].copy_from_slice(plaintext);
                out[HEADER + plaintext.len()] = typ;
                (APPLICATION_DATA, HEADER..total - TAG, &aad[..HEADER])
            }
            Version::Tls12 => {
                let mut start = HEADER;
                if self.nonce == NonceKind::Explicit {
                    out[HEADER..HEADER + EXPLICIT_NONCE].copy_from_slice(&nonce[4..]);
                    start += EXPLICIT_NONCE;
                }
                out[start..start + plaintext.len()].copy_from_slice(plaintext);
                aad = tls12_aad(seq, typ, plaintext.len());
                (typ, start..total - TAG, &aad[..])
            }
        };
        out[..HEADER].copy_from_slice(&[outer, 3, 3, length[0], length[1]]);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(aad),
                &mut out[body.clone()],
            )
            .map_err(|_| RecordError::Oversized)?;
        out[body.end..total].copy_from_slice(tag.as_ref());
        self.seq += 1;
        Ok(total)
    }

    /// Decrypts in place the whole record `record` (header included, as long as its header
    /// says); returns its real content type and where its plaintext now lies in `record`.
    pub fn open(&mut self, record: &mut [u8]) -> Result<(u8, Range<usize>), RecordError> {
        if record.len() < HEADER + TAG {
            return Err(RecordError::Malformed);
        }
        // TLS 1.3 allows 256 bytes of expansion over the plaintext (RFC 8446 §5.2), TLS 1.2
        // 2,048 (RFC 5246 §6.2.3).
        let max_ciphertext = match self.version {
            Version::Tls13 => MAX_PLAINTEXT + 256,
            Version::Tls12 => MAX_CIPHERTEXT,
        };
        if record.len() - HEADER > max_ciphertext {
            return Err(RecordError::Oversized);
        }
        let header: [u8; HEADER] = record[..HEADER].try_into().expect("length checked above");
        let nonce = self.nonce(self.seq);
        let (typ, plaintext) = match self.version {
            Version::Tls13 => {
                if header[0] != APPLICATION_DATA {
                    return Err(RecordError::Malformed);
                }
                let opened = self
                    .key
                    .open_in_place(
                        aead::Nonce::assume_unique_for_key(nonce),
                        aead::Aad::from(header),
                        &mut record[HEADER..],
                    )
                    .map_err(|_| RecordError::Decrypt)?;
                // The inner plaintext (content, type and padding) is at most 2^14 + 1 bytes.
                if opened.len() > MAX_PLAINTEXT + 1 {
                    return Err(RecordError::Oversized);
                }
                // The content type is the last non-zero byte; zeros after it are padding.
                let Some(last) = opened.iter().rposition(|&b| b != 0) else {
                    return Err(RecordError::Malformed);
                };
                (opened[last], HEADER..HEADER + last)
            }
            Version::Tls12 => {
                let (nonce, skip) = match self.nonce {
                    NonceKind::Xor => (nonce, 0),
                    NonceKind::Explicit => {
                        if record.len() < HEADER + EXPLICIT_NONCE + TAG {
                            return Err(RecordError::Malformed);
                        }
                        let mut n = self.iv;
                        n[4..].copy_from_slice(&record[HEADER..HEADER + EXPLICIT_NONCE]);
                        (n, EXPLICIT_NONCE)
                    }
                };
                let plain_len = record.len() - HEADER - skip - TAG;
                let aad = tls12_aad(self.seq, header[0], plain_len);
                self.key
                    .open_within(
                        aead::Nonce::assume_unique_for_key(nonce),
                        aead::Aad::from(aad),
                        &mut record[HEADER..],
                        skip..,
                    )
                    .map_err(|_| RecordError::Decrypt)?;
                (header[0], HEADER..HEADER + plain_len)
            }
        };
        if plaintext.len() > MAX_PLAINTEXT {
            return Err(RecordError::Oversized);
        }
        self.seq += 1;
        Ok((typ, plaintext))
    }
}

/// RFC 5246 6.2.3.3: sequence number, content type, version, plaintext length.
fn tls12_aad(seq: u64, typ: u8, len: usize) -> [u8; 13] {
    let mut aad = [0u8; 13];
    aad[..8].copy_from_slice(&seq.to_be_bytes());
    aad[8] = typ;
    aad[9..11].copy_from_slice(&[3, 3]);
    aad[11..].copy_from_slice(&(len as u16).to_be_bytes());
    aad
}

/// The length of the whole first record in `buf` if it is all there (`Ok(None)`: not yet).
pub fn complete_record(buf: &[u8]) -> Result<Option<usize>, RecordError> {
    if buf.len() < HEADER {
        return Ok(None);
    }
    let len = usize::from(u16::from_be_bytes([buf[3], buf[4]]));
    if len > MAX_CIPHERTEXT {
        return Err(RecordError::Oversized);
    }
    Ok((buf.len() >= HEADER + len).then_some(HEADER + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::crypto::cipher::{
        AeadKey, InboundOpaqueMessage, Iv, MessageDecrypter, MessageEncrypter, OutboundPlainMessage,
    };
    use rustls::{ContentType, ProtocolVersion, SupportedCipherSuite};

    const IV: [u8; 12] = [0x5a, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];

    /// rustls's own encrypter, decrypter and extracted secrets for `suite` with one key and IV
    /// (`AeadKey` is only public at 32 bytes, so the suites with 256-bit keys; the others are
    /// checked through whole sessions in `tls_session.rs`).
    fn rustls_side(
        suite: SupportedCipherSuite,
    ) -> (
        Box<dyn MessageEncrypter>,
        Box<dyn MessageDecrypter>,
        impl Fn() -> ConnectionTrafficSecrets,
        Version,
    ) {
        let key = || AeadKey::from([7u8; 32]);
        match suite {
            SupportedCipherSuite::Tls13(s) => (
                s.aead_alg.encrypter(key(), Iv::new(IV)),
                s.aead_alg.decrypter(key(), Iv::new(IV)),
                Box::new(move || s.aead_alg.extract_keys(key(), Iv::new(IV)).unwrap())
                    as Box<dyn Fn() -> ConnectionTrafficSecrets>,
                Version::Tls13,
            ),
            SupportedCipherSuite::Tls12(s) => {
                let fixed = s.aead_alg.key_block_shape().fixed_iv_len;
                (
                    s.aead_alg.encrypter(key(), &IV[..fixed], &IV[fixed..]),
                    s.aead_alg.decrypter(key(), &IV[..fixed]),
                    Box::new(move || {
                        s.aead_alg
                            .extract_keys(key(), &IV[..fixed], &IV[fixed..])
                            .unwrap()
                    }) as Box<dyn Fn() -> ConnectionTrafficSecrets>,
                    Version::Tls12,
                )
            }
        }
    }

    /// Records sealed by rustls's own record layer open here, and records sealed here open in
    /// rustls's: the constructions agree byte for byte, in both directions; a flipped bit or
    /// the wrong sequence number fails to open.
    fn agrees_with_rustls(suite: SupportedCipherSuite) {
        let big = [0xab; MAX_PLAINTEXT];
        let cases: [(ContentType, &[u8]); 4] = [
            (
                ContentType::ApplicationData,
                b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            ),
            (ContentType::ApplicationData, b""),
            (ContentType::ApplicationData, &big),
            (ContentType::Alert, &[1, 0]),
        ];
        let (mut theirs_seal, mut theirs_open, secrets, version) = rustls_side(suite);
        for (seq, (typ, plain)) in (41u64..).zip(cases) {
            let mut ours = RecordKey::new(version, secrets(), seq).unwrap();
            let msg = OutboundPlainMessage {
                typ,
                version: ProtocolVersion::TLSv1_2,
                payload: plain.into(),
            };
            let mut wire = theirs_seal.encrypt(msg, seq).unwrap().encode();
            let (got, range) = ours.open(&mut wire).unwrap();
            assert_eq!((got, &wire[range]), (u8::from(typ), plain), "{suite:?}");
            assert_eq!(ours.seq(), seq + 1);

            let mut ours = RecordKey::new(version, secrets(), seq).unwrap();
            let mut out = vec![0u8; plain.len() + ours.overhead()];
            assert_eq!(ours.seal(u8::from(typ), plain, &mut out), Ok(out.len()));
            let mut wire = out.clone();
            let opened = theirs_open
                .decrypt(
                    InboundOpaqueMessage::new(
                        ContentType::from(wire[0]),
                        ProtocolVersion::TLSv1_2,
                        &mut wire[HEADER..],
                    ),
                    seq,
                )
                .unwrap();
            assert_eq!((opened.typ, opened.payload), (typ, plain), "{suite:?}");

            let mut tampered = out.clone();
            *tampered.last_mut().unwrap() ^= 1;
            let mut fresh = RecordKey::new(version, secrets(), seq).unwrap();
            assert_eq!(fresh.open(&mut tampered), Err(RecordError::Decrypt));
            let mut later = RecordKey::new(version, secrets(), seq + 1).unwrap();
            assert_eq!(later.open(&mut out), Err(RecordError::Decrypt));
        }
    }

    #[test]
    fn records_agree_with_rustls_for_every_suite_with_256_bit_keys() {
        let mut checked = 0;
        for suite in rustls::crypto::ring::default_provider().cipher_suites {
            let key_len = match suite {
                SupportedCipherSuite::Tls13(s) => s.aead_alg.key_len(),
                SupportedCipherSuite::Tls12(s) => s.aead_alg.key_block_shape().enc_key_len,
            };
            if key_len == 32 {
                agrees_with_rustls(suite);
                checked += 1;
            }
        }
        // AES-256-GCM and ChaCha20-Poly1305: two TLS 1.3 suites, four TLS 1.2 ones.
        assert_eq!(checked, 6);
    }

    #[test]
    fn a_record_too_long_for_its_buffer_is_refused_not_cut() {
        let SupportedCipherSuite::Tls13(s) =
            rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256
        else {
            unreachable!()
        };
        let secrets = s
            .aead_alg
            .extract_keys(AeadKey::from([1; 32]), Iv::new(IV))
            .unwrap();
        let mut key = RecordKey::new(Version::Tls13, secrets, 0).unwrap();
        let mut out = [0u8; 64];
        assert_eq!(
            key.seal(APPLICATION_DATA, &[1; 60], &mut out),
            Err(RecordError::Oversized)
        );
        assert_eq!(key.seq(), 0);
        assert_eq!(key.seal(APPLICATION_DATA, &[1; 42], &mut out), Ok(64));
    }

    /// TLS 1.3 ciphertext may exceed its plaintext by 256 bytes at most (RFC 8446 §5.2): a
    /// longer record is refused before it is opened, a TLS 1.2 one of that size is not.
    #[test]
    fn a_tls13_record_beyond_its_expansion_limit_is_oversized() {
        let SupportedCipherSuite::Tls13(s) =
            rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256
        else {
            unreachable!()
        };
        let secrets = || {
            s.aead_alg
                .extract_keys(AeadKey::from([1; 32]), Iv::new(IV))
                .unwrap()
        };
        let len = MAX_PLAINTEXT + 300;
        let mut record = vec![0u8; HEADER + len];
        record[..HEADER].copy_from_slice(&[APPLICATION_DATA, 3, 3, (len >> 8) as u8, len as u8]);
        let mut key = RecordKey::new(Version::Tls13, secrets(), 0).unwrap();
        assert_eq!(key.open(&mut record), Err(RecordError::Oversized));
        // Within TLS 1.2's bound it gets as far as the decryption (which this garbage fails).
        let mut key = RecordKey::new(Version::Tls12, secrets(), 0).unwrap();
        assert_eq!(key.open(&mut record), Err(RecordError::Decrypt));
    }

    #[test]
    fn record_boundaries_are_found_and_bounded() {
        assert_eq!(complete_record(&[23, 3, 3, 0]), Ok(None));
        assert_eq!(complete_record(&[23, 3, 3, 0, 2, 9]), Ok(None));
        assert_eq!(complete_record(&[23, 3, 3, 0, 2, 9, 9, 1]), Ok(Some(7)));
        assert_eq!(
            complete_record(&[23, 3, 3, 0xff, 0xff]),
            Err(RecordError::Oversized)
        );
    }
}
