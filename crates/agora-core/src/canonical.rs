//! Canonical-encoding checks for postcard.
//!
//! postcard decoding is not canonical on its own (it accepts overlong varints
//! and, with `take_from_bytes`, trailing bytes), so every decoder of a signed
//! or hashed format re-encodes what it decoded and refuses bytes that differ.
//! [`encodes_to`] does that comparison while serializing, without building a
//! copy of the encoding.

use serde::Serialize;

/// Whether postcard's encoding of `value` is exactly `expected`.
pub fn encodes_to<T: Serialize + ?Sized>(value: &T, expected: &[u8]) -> bool {
    postcard::serialize_with_flavor(value, CompareFlavor { expected, pos: 0, equal: true }).unwrap_or(false)
}

/// A postcard output that compares what would be written with `expected`
/// instead of storing it.
struct CompareFlavor<'a> {
    expected: &'a [u8],
    pos: usize,
    equal: bool,
}

impl postcard::ser_flavors::Flavor for CompareFlavor<'_> {
    type Output = bool;

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        let end = self.pos + data.len();
        self.equal = self.equal && self.expected.get(self.pos..end) == Some(data);
        self.pos = end;
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.equal = self.equal && self.expected.get(self.pos) == Some(&data);
        self.pos += 1;
        Ok(())
    }

    fn finalize(self) -> postcard::Result<bool> {
        Ok(self.equal && self.pos == self.expected.len())
    }
}

#[cfg(test)]
mod tests {
    use super::encodes_to;

    #[test]
    fn equal_only_for_the_exact_encoding() {
        let value: (u64, Vec<u8>) = (300, vec![1, 2, 3]);
        let bytes = postcard::to_allocvec(&value).unwrap();
        assert!(encodes_to(&value, &bytes));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(!encodes_to(&value, &longer), "trailing byte");
        assert!(!encodes_to(&value, &bytes[..bytes.len() - 1]), "truncated");
        let mut other = bytes.clone();
        other[0] ^= 1;
        assert!(!encodes_to(&value, &other), "changed byte");
    }
}
