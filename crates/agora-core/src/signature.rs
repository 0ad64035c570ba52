//! Ed25519 verification rules shared by single and batch verification.
//!
//! A signature `(R, S)` by key `A` on message `M` is valid when:
//! 1. `A` is a canonical encoding of a curve point that is not of small order
//!    (no weak keys);
//! 2. `R` is a canonical encoding of a curve point that is not of small order;
//! 3. `S` is a canonical scalar, `S < l` (no `S + l` malleability);
//! 4. `[8]([S]B - [k]A - R)` is the identity, with `k = SHA-512(R || A || M) mod l`.
//!
//! Why the cofactored equation (4): nodes verify the same entries in different
//! batches, and cofactorless batch verification is not consistent with
//! cofactorless single verification (a torsion component in `R` passes a batch
//! with probability up to 1/2). With the cofactored equation, single and batch
//! verification accept exactly the same signatures, so every node reaches the
//! same verdict on every input and no honest relay is ever blamed for a signature
//! another node accepted. This is the rule set of Zcash's ZIP 215 with the strict
//! encoding checks of `verify_strict` added. Signatures made by any RFC 8032
//! signer satisfy it; signature bytes are not part of an entry's id, so the
//! residual freedom (adding a torsion point to `R`) cannot change any id,
//! create a fork, or alter what was signed.

use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use sha2::{Digest, Sha512};

/// Why a signature or key was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The public key is not a canonical point encoding or not on the curve.
    #[error("public key is not a canonical curve point")]
    KeyEncoding,
    /// The public key is a point of small order (a weak key).
    #[error("public key is a weak (small-order) point")]
    WeakKey,
    /// `R` is not a canonical point encoding or not on the curve.
    #[error("signature R is not a canonical curve point")]
    REncoding,
    /// `R` is a point of small order.
    #[error("signature R is a small-order point")]
    WeakR,
    /// `S` is not reduced modulo the group order (malleable).
    #[error("signature S is not canonical (S >= l)")]
    SNonCanonical,
    /// The verification equation does not hold.
    #[error("signature does not verify")]
    Equation,
}

impl SignatureError {
    /// A stable, machine-readable name for the error (used in test vectors).
    pub fn code(&self) -> &'static str {
        match self {
            SignatureError::KeyEncoding => "key_encoding",
            SignatureError::WeakKey => "weak_key",
            SignatureError::REncoding => "r_encoding",
            SignatureError::WeakR => "weak_r",
            SignatureError::SNonCanonical => "s_non_canonical",
            SignatureError::Equation => "bad_signature",
        }
    }
}

/// A verified public key: canonical, on the curve, not of small order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey {
    bytes: [u8; 32],
    point: EdwardsPoint,
}

impl PublicKey {
    /// Check `bytes` against rule 1 and decompress.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, SignatureError> {
        let point = decompress_canonical(bytes).ok_or(SignatureError::KeyEncoding)?;
        if point.is_small_order() {
            return Err(SignatureError::WeakKey);
        }
        Ok(Self { bytes: *bytes, point })
    }

    /// The compressed key.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.bytes
    }
}

/// A parsed signature: `R` decompressed and checked, `S` checked canonical.
struct ParsedSignature {
    r: EdwardsPoint,
    s: Scalar,
}

fn parse_signature(sig: &[u8; 64]) -> Result<ParsedSignature, SignatureError> {
    let mut r_bytes = [0u8; 32];
    r_bytes.copy_from_slice(&sig[..32]);
    let mut s_bytes = [0u8; 32];
    s_bytes.copy_from_slice(&sig[32..]);
    let s = Option::<Scalar>::from(Scalar::from_canonical_bytes(s_bytes)).ok_or(SignatureError::SNonCanonical)?;
    let r = decompress_canonical(&r_bytes).ok_or(SignatureError::REncoding)?;
    if r.is_small_order() {
        return Err(SignatureError::WeakR);
    }
    Ok(ParsedSignature { r, s })
}

/// The field prime p = 2^255 - 19, little endian.
const P_BYTES: [u8; 32] = {
    let mut p = [0xffu8; 32];
    p[0] = 0xed;
    p[31] = 0x7f;
    p
};

/// True when the 255-bit little-endian `y` (sign bit masked) is below p.
fn y_is_reduced(bytes: &[u8; 32]) -> bool {
    let mut y = *bytes;
    y[31] &= 0x7f;
    // Compare from the most significant byte.
    for i in (0..32).rev() {
        if y[i] != P_BYTES[i] {
            return y[i] < P_BYTES[i];
        }
    }
    false // y == p
}

/// Decompress a point, rejecting every non-canonical encoding: `y >= p`, and a
/// set sign bit on a point whose x is zero (y = 1 or y = p - 1). Checked on the
/// bytes, so no field inversion is needed to re-compress.
fn decompress_canonical(bytes: &[u8; 32]) -> Option<EdwardsPoint> {
    if !y_is_reduced(bytes) {
        return None;
    }
    let sign = bytes[31] >> 7 == 1;
    if sign {
        let mut y = *bytes;
        y[31] &= 0x7f;
        let mut one = [0u8; 32];
        one[0] = 1;
        let mut p_minus_one = P_BYTES;
        p_minus_one[0] = 0xec;
        if y == one || y == p_minus_one {
            return None;
        }
    }
    CompressedEdwardsY(*bytes).decompress()
}

fn challenge(r_bytes: &[u8], key: &PublicKey, message_parts: &[&[u8]]) -> Scalar {
    let mut h = Sha512::new();
    h.update(r_bytes);
    h.update(key.bytes);
    for part in message_parts {
        h.update(part);
    }
    let mut wide = [0u8; 64];
    wide.copy_from_slice(&h.finalize());
    Scalar::from_bytes_mod_order_wide(&wide)
}

/// Verify one signature on the message formed by concatenating `message_parts`.
pub fn verify(key: &PublicKey, message_parts: &[&[u8]], sig: &[u8; 64]) -> Result<(), SignatureError> {
    let parsed = parse_signature(sig)?;
    let k = challenge(&sig[..32], key, message_parts);
    // [S]B - [k]A - R, then clear the cofactor.
    let sb_minus_ka = EdwardsPoint::vartime_double_scalar_mul_basepoint(&k, &(-key.point), &parsed.s);
    if (sb_minus_ka - parsed.r).mul_by_cofactor().is_identity() { Ok(()) } else { Err(SignatureError::Equation) }
}

/// One item of a batch: key, message parts and signature.
pub struct BatchItem<'a> {
    /// The signer.
    pub key: &'a PublicKey,
    /// The signed message, as parts to be concatenated (e.g. domain tag, header).
    pub message: [&'a [u8]; 2],
    /// The signature bytes `R || S`.
    pub signature: &'a [u8; 64],
}

/// Verify many signatures at once. Returns `Ok(())` when every one is valid under
/// the rules above. On `Err`, at least one is invalid; call [`verify`] on each to
/// find which (this function does not say, to stay cheap on the fast path).
///
/// Terms for the same key are combined, so a batch from one author's chain costs
/// one multiscalar multiplication over `n + 2` points rather than `2n + 1`.
pub fn verify_batch(items: &[BatchItem<'_>]) -> Result<(), SignatureError> {
    match items {
        [] => return Ok(()),
        // One signature: the single check, which accepts exactly the same
        // inputs and costs one double-base multiplication instead of a
        // weighted multiscalar one (every gossiped entry is checked alone).
        [one] => return verify(one.key, &one.message, one.signature),
        _ => {}
    }
    let mut parsed = Vec::with_capacity(items.len());
    let mut challenges = Vec::with_capacity(items.len());
    // The random weights z_i are derived from every input (Fiat-Shamir), so the
    // result is a deterministic function of the batch and cannot be ground.
    let mut transcript = Sha512::new();
    transcript.update(b"agora batch verification v1");
    for item in items {
        parsed.push(parse_signature(item.signature)?);
        let k = challenge(&item.signature[..32], item.key, &item.message);
        transcript.update(item.signature);
        transcript.update(item.key.bytes);
        transcript.update(k.as_bytes());
        challenges.push(k);
    }
    let seed = transcript.finalize();

    let mut scalars: Vec<Scalar> = Vec::with_capacity(items.len() + 2);
    let mut points: Vec<EdwardsPoint> = Vec::with_capacity(items.len() + 2);
    let mut base_coefficient = Scalar::ZERO;
    // Keys seen in this batch with the index of their coefficient in `scalars`.
    let mut key_slots: Vec<(&[u8; 32], usize)> = Vec::new();
    for (i, (item, (sig, k))) in items.iter().zip(parsed.iter().zip(&challenges)).enumerate() {
        let z = weight(&seed, i);
        base_coefficient += z * sig.s;
        scalars.push(z);
        points.push(sig.r);
        let zk = z * k;
        match key_slots.iter().find(|(bytes, _)| **bytes == item.key.bytes) {
            Some(&(_, slot)) => scalars[slot] += zk,
            None => {
                key_slots.push((&item.key.bytes, scalars.len()));
                scalars.push(zk);
                points.push(item.key.point);
            }
        }
    }
    scalars.push(-base_coefficient);
    points.push(ED25519_BASEPOINT_POINT);
    // sum z_i R_i + sum (z_i k_i) A_i - (sum z_i S_i) B must vanish up to torsion.
    let sum = EdwardsPoint::vartime_multiscalar_mul(scalars.iter(), points.iter());
    if sum.mul_by_cofactor().is_identity() { Ok(()) } else { Err(SignatureError::Equation) }
}

/// The i-th 128-bit batch weight, derived from the transcript seed.
fn weight(seed: &[u8], i: usize) -> Scalar {
    let mut h = Sha512::new();
    h.update(seed);
    h.update((i as u64).to_le_bytes());
    let digest = h.finalize();
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(&digest[..16]);
    Scalar::from_bytes_mod_order(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn public(sk: &SigningKey) -> PublicKey {
        PublicKey::from_bytes(sk.verifying_key().as_bytes()).unwrap()
    }

    #[test]
    fn honest_signatures_verify_single_and_batch() {
        let sks: Vec<_> = (1..=5).map(key).collect();
        let pks: Vec<_> = sks.iter().map(public).collect();
        let msgs: Vec<Vec<u8>> = (0..20).map(|i| vec![i as u8; i]).collect();
        let sigs: Vec<[u8; 64]> = msgs.iter().enumerate().map(|(i, m)| sks[i % 5].sign(m).to_bytes()).collect();
        let items: Vec<_> = msgs.iter().enumerate().map(|(i, m)| BatchItem { key: &pks[i % 5], message: [b"", m], signature: &sigs[i] }).collect();
        for item in &items {
            verify(item.key, &item.message, item.signature).unwrap();
            // Agrees with dalek's strict verifier on honest signatures.
            let vk = ed25519_dalek::VerifyingKey::from_bytes(item.key.as_bytes()).unwrap();
            vk.verify_strict(item.message[1], &ed25519_dalek::Signature::from_bytes(item.signature)).unwrap();
        }
        verify_batch(&items).unwrap();
    }

    #[test]
    fn one_bad_signature_fails_the_batch() {
        let sk = key(7);
        let pk = public(&sk);
        let msgs: Vec<Vec<u8>> = (0..10).map(|i| vec![i as u8; 3]).collect();
        let mut sigs: Vec<[u8; 64]> = msgs.iter().map(|m| sk.sign(m).to_bytes()).collect();
        sigs[4][40] ^= 1;
        let items: Vec<_> = msgs.iter().zip(&sigs).map(|(m, s)| BatchItem { key: &pk, message: [b"", m], signature: s }).collect();
        assert!(verify_batch(&items).is_err());
        assert!(verify(&pk, &items[4].message, items[4].signature).is_err());
    }

    #[test]
    fn a_batch_of_one_is_the_single_check() {
        let sk = key(8);
        let pk = public(&sk);
        let good = sk.sign(b"one").to_bytes();
        let mut bad = good;
        bad[40] ^= 1;
        assert_eq!(verify_batch(&[BatchItem { key: &pk, message: [b"", b"one"], signature: &good }]), Ok(()));
        let one_bad = [BatchItem { key: &pk, message: [b"", b"one"], signature: &bad }];
        assert_eq!(verify_batch(&one_bad), verify(&pk, &one_bad[0].message, &bad));
        assert!(verify_batch(&one_bad).is_err());
    }

    #[test]
    fn malleable_s_is_rejected() {
        let sk = key(9);
        let pk = public(&sk);
        let mut sig = sk.sign(b"m").to_bytes();
        // S + l: same value mod l, different bytes.
        let l_bytes: [u8; 32] =
            [0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10];
        let mut carry = 0u16;
        for i in 0..32 {
            let v = sig[32 + i] as u16 + l_bytes[i] as u16 + carry;
            sig[32 + i] = v as u8;
            carry = v >> 8;
        }
        assert_eq!(verify(&pk, &[b"m"], &sig), Err(SignatureError::SNonCanonical));
    }

    #[test]
    fn weak_keys_and_small_order_r_are_rejected() {
        // The identity point (y = 1) is of small order.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(PublicKey::from_bytes(&identity), Err(SignatureError::WeakKey));
        // y = 1 with the sign bit set is a non-canonical encoding of the identity.
        let mut neg_zero = identity;
        neg_zero[31] |= 0x80;
        assert_eq!(PublicKey::from_bytes(&neg_zero), Err(SignatureError::KeyEncoding));
        // y = p is non-canonical.
        assert_eq!(PublicKey::from_bytes(&P_BYTES), Err(SignatureError::KeyEncoding));

        let sk = key(3);
        let pk = public(&sk);
        let mut sig = sk.sign(b"m").to_bytes();
        sig[..32].copy_from_slice(&identity);
        assert_eq!(verify(&pk, &[b"m"], &sig), Err(SignatureError::WeakR));
    }
}
