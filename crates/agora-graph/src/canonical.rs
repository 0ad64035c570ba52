//! Decoding an event payload ([`Event::decode`]) and the decoder's fast path,
//! which reads an event body that is already in canonical postcard form, in
//! one pass, without serde.
//!
//! Replaying a log decodes every payload, and the serde path (postcard's
//! deserializer, then a second serialization to prove the bytes canonical)
//! was a fifth of the replay. This reader accepts exactly the canonical
//! encodings: minimal varints whose value fits the field, `00`/`01` for bools
//! and option tags, known variant indices, valid UTF-8, lengths within the
//! bytes left, and no trailing bytes. For those, postcard gives the same event
//! and re-encodes it to the same bytes. Everything else returns `None`, and
//! [`Event::decode`] runs the serde path, which decides and words the error;
//! so the fast path can only ever make decoding faster, never change its
//! answer. The tests below check that both paths accept the same bytes as
//! the same event: every kind, every byte of short encodings replaced by edge
//! values, random edits and noise. A kind added to `Event` but not here still
//! decodes (through serde); `every_kind_is_read_by_the_fast_path` says so.

use crate::event::{Confidence, EVENT_FRAMING, Event, EventDecodeError, MemoryKind, Relation, TaskState};
use agora_core::EntryId;

const TASK_STATES: [TaskState; 5] = [TaskState::Created, TaskState::InProgress, TaskState::Blocked, TaskState::Done, TaskState::Abandoned];
const CONFIDENCES: [Confidence; 3] = [Confidence::Low, Confidence::Medium, Confidence::High];

impl Event {
    /// Decode an event payload canonically.
    pub fn decode(payload: &[u8]) -> Result<Self, EventDecodeError> {
        let body = EVENT_FRAMING.body(payload)?;
        // Almost every payload is canonical: read it in one pass. Anything the
        // fast reader does not accept goes the serde way, which decides.
        let event = match decode(body) {
            Some(event) => event,
            None => Self::decode_body_serde(body)?,
        };
        event.check_limits()?;
        Ok(event)
    }

    /// The postcard body of an event, decoded by serde and accepted only if
    /// canonical. The reference for [`decode`].
    pub(crate) fn decode_body_serde(body: &[u8]) -> Result<Self, EventDecodeError> {
        Ok(agora_core::canonical::decode_body(body)?)
    }
}

/// The event encoded by `body` (postcard, after magic and version), if `body`
/// is canonical; `None` otherwise, which does not mean invalid.
pub(crate) fn decode(body: &[u8]) -> Option<Event> {
    let mut r = Reader { rest: body };
    let event = r.event()?;
    r.rest.is_empty().then_some(event)
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    /// A minimal LEB128 varint of a `bits`-bit unsigned field.
    fn varint(&mut self, bits: u32) -> Option<u64> {
        let bytes_max = bits.div_ceil(7) as usize;
        let mut value: u128 = 0;
        for i in 0..bytes_max {
            let b = self.byte()?;
            value |= u128::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                // Minimal: a last byte of zero would be a longer form of a shorter varint.
                let minimal = i == 0 || b != 0;
                return (minimal && value < 1u128 << bits).then_some(value as u64);
            }
        }
        None
    }

    fn u16(&mut self) -> Option<u16> {
        self.varint(16).map(|v| v as u16)
    }

    fn u32(&mut self) -> Option<u32> {
        self.varint(32).map(|v| v as u32)
    }

    fn u64(&mut self) -> Option<u64> {
        self.varint(64)
    }

    /// A length, bounded by the bytes left (each element is at least one byte).
    fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.varint(usize::BITS)?).ok()?;
        (n <= self.rest.len()).then_some(n)
    }

    fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn string(&mut self) -> Option<String> {
        let n = self.len()?;
        let bytes = self.take(n)?;
        std::str::from_utf8(bytes).ok().map(str::to_owned)
    }

    fn id(&mut self) -> Option<EntryId> {
        let bytes = self.take(32)?;
        let mut id = [0u8; 32];
        id.copy_from_slice(bytes);
        Some(EntryId(id))
    }

    /// A 32-byte hash (an action's `input_hash`, `output_hash`): as an id, the bytes as they are.
    fn hash(&mut self) -> Option<[u8; 32]> {
        self.id().map(|id| id.0)
    }

    fn ids(&mut self) -> Option<Vec<EntryId>> {
        let n = self.len()?;
        // Bounded before allocating: n ids need 32n bytes.
        if n > self.rest.len() / 32 {
            return None;
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.id()?);
        }
        Some(out)
    }

    fn option<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        match self.byte()? {
            0 => Some(None),
            1 => read(self).map(Some),
            _ => None,
        }
    }

    /// A unit variant of an enum whose variants, in index order, are `all`.
    fn variant<T: Copy>(&mut self, all: &[T]) -> Option<T> {
        all.get(usize::try_from(self.u32()?).ok()?).copied()
    }

    /// One event. Struct literal fields are evaluated in the order written,
    /// which here is the wire order (the order of `Event`'s fields).
    fn event(&mut self) -> Option<Event> {
        Some(match self.u32()? {
            0 => Event::Proposition { text: self.string()? },
            1 => Event::Support { target: self.id()?, text: self.string()? },
            2 => Event::Contradiction { target: self.id()?, text: self.string()? },
            3 => Event::Refinement { target: self.id()?, resolves: self.ids()?, text: self.string()? },
            4 => Event::Synthesis { sources: self.ids()?, text: self.string()? },
            5 => Event::Question { text: self.string()? },
            6 => Event::Resolve { target: self.id()?, text: self.string()? },
            7 => Event::Connection { a: self.id()?, b: self.id()?, text: self.string()? },
            8 => Event::Tension { a: self.id()?, b: self.id()?, text: self.string()? },
            9 => Event::Reframe { target: self.id()?, text: self.string()? },
            10 => Event::Park { target: self.id()?, reason: self.string()? },
            11 => Event::Resume { target: self.id()? },
            12 => Event::Claim {
                text: self.string()?,
                kind: self.variant(&MemoryKind::ALL)?,
                sources: self.ids()?,
                owner_scope: self.string()?,
                confirmed: self.bool()?,
                expires_at_ms: self.option(Self::u64)?,
            },
            13 => Event::Relate { from: self.id()?, to: self.id()?, relation: self.variant(&Relation::ALL)?, reason: self.string()? },
            14 => Event::Confirm { target: self.id()? },
            15 => Event::FrameOpen {
                parent: self.option(Self::id)?,
                query: self.string()?,
                branched_from: self.option(Self::id)?,
                invalidation_condition: self.string()?,
            },
            16 => Event::FrameEvidence { frame: self.id()?, text: self.string()? },
            17 => Event::FrameConclude { frame: self.id()?, conclusion: self.string()?, confidence_bp: self.u16()? },
            18 => Event::FrameSuspend { frame: self.id()? },
            19 => Event::FrameResume { frame: self.id()? },
            20 => Event::FrameInvalidate { frame: self.id()?, reason: self.string()? },
            21 => Event::Task { objective: self.string()?, owner_scope: self.string()? },
            22 => Event::TaskUpdate { task: self.id()?, state: self.variant(&TASK_STATES)?, note: self.string()? },
            23 => Event::Trajectory { task_query: self.string()?, final_answer: self.string()?, iterations: self.u32()?, converged: self.bool()? },
            24 => Event::Judgment { trajectory: self.id()?, success: self.bool()?, reason: self.string()?, confidence: self.variant(&CONFIDENCES)? },
            25 => Event::MemoryItem {
                title: self.string()?,
                description: self.string()?,
                content: self.string()?,
                scope: self.string()?,
                source_trajectory: self.option(Self::id)?,
            },
            26 => Event::Usage { trajectory: self.id()?, item: self.id()?, rank: self.u32()?, score_bp: self.u16()? },
            27 => Event::Action {
                operation: self.string()?,
                name: self.string()?,
                conversation: self.string()?,
                span: self.string()?,
                parent: self.string()?,
                cause: self.option(Self::id)?,
                input_hash: self.option(Self::hash)?,
                output_hash: self.option(Self::hash)?,
                text: self.string()?,
                error: self.string()?,
            },
            // A kind this reader does not know: the serde path decides (a newer kind).
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{KIND_COUNT, TEXT_BYTES_MAX};
    use proptest::prelude::*;

    /// Deterministic values from a seed, with the edges of every field type.
    struct Gen(agora_core::xorshift::Xorshift64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0.next_u64()
        }
        fn below(&mut self, n: u64) -> u64 {
            self.0.below_u64(n)
        }
        fn uint(&mut self, max: u64) -> u64 {
            match self.below(6) {
                0 => 0,
                1 => max,
                2 => 127,
                3 => 128,
                4 => self.next() & max & 0x3fff,
                _ => self.next() & max,
            }
        }
        fn text(&mut self) -> String {
            match self.below(6) {
                0 => String::new(),
                1 => "é ✓ 𝄞 ünïcödé".repeat(1 + self.below(3) as usize),
                2 => "x".repeat(127 + self.below(3) as usize),
                3 => "y".repeat(TEXT_BYTES_MAX + self.below(2) as usize),
                _ => format!("text {}", self.next()),
            }
        }
        fn id(&mut self) -> EntryId {
            let mut id = [0u8; 32];
            id.iter_mut().for_each(|b| *b = self.next() as u8);
            EntryId(id)
        }
        fn ids(&mut self) -> Vec<EntryId> {
            let n = match self.below(4) {
                0 => 0,
                1 => 65,
                _ => 1 + self.below(4),
            };
            (0..n).map(|_| self.id()).collect()
        }
        fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
            (self.below(2) == 0).then(|| f(self))
        }
        fn pick<T: Copy>(&mut self, all: &[T]) -> T {
            all[self.below(all.len() as u64) as usize]
        }
        fn event(&mut self, kind: u32) -> Event {
            match kind {
                0 => Event::Proposition { text: self.text() },
                1 => Event::Support { target: self.id(), text: self.text() },
                2 => Event::Contradiction { target: self.id(), text: self.text() },
                3 => Event::Refinement { target: self.id(), resolves: self.ids(), text: self.text() },
                4 => Event::Synthesis { sources: self.ids(), text: self.text() },
                5 => Event::Question { text: self.text() },
                6 => Event::Resolve { target: self.id(), text: self.text() },
                7 => Event::Connection { a: self.id(), b: self.id(), text: self.text() },
                8 => Event::Tension { a: self.id(), b: self.id(), text: self.text() },
                9 => Event::Reframe { target: self.id(), text: self.text() },
                10 => Event::Park { target: self.id(), reason: self.text() },
                11 => Event::Resume { target: self.id() },
                12 => Event::Claim {
                    text: self.text(),
                    kind: self.pick(&MemoryKind::ALL),
                    sources: self.ids(),
                    owner_scope: self.text(),
                    confirmed: self.below(2) == 0,
                    expires_at_ms: self.opt(|g| g.uint(u64::MAX)),
                },
                13 => Event::Relate { from: self.id(), to: self.id(), relation: self.pick(&Relation::ALL), reason: self.text() },
                14 => Event::Confirm { target: self.id() },
                15 => {
                    Event::FrameOpen { parent: self.opt(Self::id), query: self.text(), branched_from: self.opt(Self::id), invalidation_condition: self.text() }
                }
                16 => Event::FrameEvidence { frame: self.id(), text: self.text() },
                17 => Event::FrameConclude { frame: self.id(), conclusion: self.text(), confidence_bp: self.uint(u64::from(u16::MAX)) as u16 },
                18 => Event::FrameSuspend { frame: self.id() },
                19 => Event::FrameResume { frame: self.id() },
                20 => Event::FrameInvalidate { frame: self.id(), reason: self.text() },
                21 => Event::Task { objective: self.text(), owner_scope: self.text() },
                22 => Event::TaskUpdate { task: self.id(), state: self.pick(&TASK_STATES), note: self.text() },
                23 => Event::Trajectory {
                    task_query: self.text(),
                    final_answer: self.text(),
                    iterations: self.uint(u64::from(u32::MAX)) as u32,
                    converged: self.below(2) == 0,
                },
                24 => Event::Judgment { trajectory: self.id(), success: self.below(2) == 0, reason: self.text(), confidence: self.pick(&CONFIDENCES) },
                25 => Event::MemoryItem {
                    title: self.text(),
                    description: self.text(),
                    content: self.text(),
                    scope: self.text(),
                    source_trajectory: self.opt(Self::id),
                },
                26 => Event::Usage {
                    trajectory: self.id(),
                    item: self.id(),
                    rank: self.uint(u64::from(u32::MAX)) as u32,
                    score_bp: self.uint(u64::from(u16::MAX)) as u16,
                },
                27 => Event::Action {
                    operation: self.text(),
                    name: self.text(),
                    conversation: self.text(),
                    span: self.text(),
                    parent: self.text(),
                    cause: self.opt(Self::id),
                    input_hash: self.opt(|g| g.id().0),
                    output_hash: self.opt(|g| g.id().0),
                    text: self.text(),
                    error: self.text(),
                },
                _ => unreachable!("kind {kind}"),
            }
        }
    }

    /// The body of an encoded event (after magic and version).
    fn body(ev: &Event) -> Vec<u8> {
        ev.encode()[5..].to_vec()
    }

    /// Fast and serde paths agree on `bytes`: the fast reader accepts exactly
    /// what the serde path accepts, with the same event.
    fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
        let fast = decode(bytes);
        let serde = Event::decode_body_serde(bytes).ok();
        prop_assert_eq!(fast, serde, "bytes {:02x?}", bytes);
        Ok(())
    }

    /// Bytes that sit on the edges of what the reader checks.
    const EDGE_BYTES: [u8; 9] = [0x00, 0x01, 0x02, 0x03, 0x7f, 0x80, 0x81, 0xc0, 0xff];

    fn interesting_byte() -> impl Strategy<Value = u8> {
        prop_oneof![prop::sample::select(EDGE_BYTES.to_vec()), any::<u8>()]
    }

    /// Every byte of short encodings of every kind, replaced by each edge
    /// byte in turn (tags, bools, variant indices, varint continuation bits,
    /// lengths, UTF-8).
    #[test]
    fn every_single_byte_substitution_agrees() {
        let mut g = Gen(agora_core::xorshift::Xorshift64(11));
        for kind in 0..KIND_COUNT {
            let mut done = 0;
            while done < 12 {
                let original = body(&g.event(kind));
                if original.len() > 400 {
                    continue;
                }
                done += 1;
                for i in 0..original.len() {
                    for v in EDGE_BYTES {
                        let mut bytes = original.clone();
                        bytes[i] = v;
                        assert_eq!(decode(&bytes), Event::decode_body_serde(&bytes).ok(), "kind {kind}, byte {i} = {v:02x}: {bytes:02x?}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_kind_is_read_by_the_fast_path() {
        let mut g = Gen(agora_core::xorshift::Xorshift64(7));
        for kind in 0..KIND_COUNT {
            for _ in 0..200 {
                let ev = g.event(kind);
                assert_eq!(decode(&body(&ev)).as_ref(), Some(&ev), "kind {kind}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_000))]

        /// Random edits of valid encodings (changed, inserted, removed bytes,
        /// truncation), including overlong and out-of-range varints, bad tags
        /// and bad UTF-8: both paths accept the same bytes, as the same event.
        #[test]
        fn fast_path_accepts_exactly_what_serde_accepts(
            seed in any::<u64>(),
            kind in 0..KIND_COUNT,
            edits in proptest::collection::vec((0..4u8, any::<prop::sample::Index>(), interesting_byte()), 0..4),
        ) {
            let mut bytes = body(&Gen(agora_core::xorshift::Xorshift64(seed)).event(kind));
            agree(&bytes)?;
            for (op, at, byte) in edits {
                let i = at.index(bytes.len() + 1);
                match op {
                    0 if i < bytes.len() => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    2 if i < bytes.len() => { bytes.remove(i); }
                    _ => bytes.truncate(i),
                }
                agree(&bytes)?;
            }
        }

        /// Arbitrary bytes behind a known kind code.
        #[test]
        fn fast_path_agrees_on_noise(kind in 0..KIND_COUNT, noise in proptest::collection::vec(any::<u8>(), 0..80)) {
            let mut bytes = vec![kind as u8];
            bytes.extend(noise);
            agree(&bytes)?;
        }
    }

    /// Varint edges the random edits may miss: overlong forms, values past
    /// the field's width, the widest accepted values.
    #[test]
    fn varint_edges() {
        let conclude = |bp: &[u8]| {
            let mut b = vec![17u8];
            b.extend([7u8; 32]);
            b.extend([1, b'c']);
            b.extend(bp);
            b
        };
        for bp in [&[0x00][..], &[0x7f], &[0x80, 0x01], &[0x80, 0x00], &[0xff, 0xff, 0x03], &[0xff, 0xff, 0x04], &[0x80, 0x80, 0x00], &[0xff, 0xff, 0xff, 0x01]]
        {
            let bytes = conclude(bp);
            assert_eq!(decode(&bytes), Event::decode_body_serde(&bytes).ok(), "{bp:02x?}");
        }
        let usage = |rank: &[u8]| {
            let mut b = vec![26u8];
            b.extend([7u8; 64]);
            b.extend(rank);
            b.push(0);
            b
        };
        for rank in
            [&[0xff, 0xff, 0xff, 0xff, 0x0f][..], &[0xff, 0xff, 0xff, 0xff, 0x10], &[0x80, 0x80, 0x80, 0x80, 0x00], &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]]
        {
            let bytes = usage(rank);
            assert_eq!(decode(&bytes), Event::decode_body_serde(&bytes).ok(), "{rank:02x?}");
        }
        let claim_expiry = |exp: &[u8]| {
            let mut b = vec![12u8, 0, 0, 0, 0, 0, 1];
            b.extend(exp);
            b
        };
        for exp in
            [&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01][..], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02], &[0x80, 0x00]]
        {
            let bytes = claim_expiry(exp);
            assert_eq!(decode(&bytes), Event::decode_body_serde(&bytes).ok(), "{exp:02x?}");
        }
    }
}
