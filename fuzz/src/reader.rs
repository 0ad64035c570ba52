//! Reading a fuzz input as a sequence of small fields. Every read past the
//! end gives `None`, so any bytes are a valid input.

/// A cursor over the fuzzer's bytes.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Start at the first byte.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }
    /// One byte.
    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }
    /// Two bytes, little-endian.
    pub fn u16(&mut self) -> Option<u16> {
        let b = self.data.get(self.pos..self.pos + 2)?;
        self.pos += 2;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }
    /// `n` bytes, or what is left if fewer remain (`None` only at the end).
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.pos >= self.data.len() && n > 0 {
            return None;
        }
        let end = self.pos.saturating_add(n).min(self.data.len());
        let out = &self.data[self.pos..end];
        self.pos = end;
        Some(out)
    }
    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }
}
