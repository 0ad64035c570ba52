//! The graph digest ([`Graph::digest`]): a hash of the snapshot's nodes that
//! is kept current as events apply, for views that are asked for their hash
//! after every arrival (a live perspective).
//!
//! [`Graph::view_hash`] hashes the whole snapshot, so asking it after each
//! new event costs the whole graph (about 0.2 s at 700k nodes). The digest is
//! two-level instead: nodes are grouped into [`DIGEST_BUCKETS`](super::DIGEST_BUCKETS) buckets by the
//! first 12 bits of their id (uniform: ids are SHA-256 outputs), each bucket
//! has a digest over its nodes' snapshot bytes in id order, and the digest
//! covers the bucket digests and the pending set. An event changes its own
//! node and the few nodes it names, so only their buckets are hashed again.
//!
//! The invariant: after any sequence of applies, [`Graph::digest`] equals the
//! digest computed from scratch over the same graph (the same bytes as a
//! fresh replay's). Every write to a node goes through `Graph::changed` or
//! `Graph::added` (see `effects.rs`); `tests/pinned.rs` checks the equality
//! after every step of seeded logs that use every kind of event. The layout
//! is normative (`protocol-spec/merge.md`, "Perspective hash").

use super::buckets::{DIGEST_TAG, Digests, bucket};
use super::node_state::Ix;
use super::snapshot::write_snapshot_node;
use super::{Graph, NodeRef};
use agora_core::{EntryId, LogPosition};
use rayon::prelude::*;

impl Graph {
    /// Node `ix` is about to change: its bucket's digest must be computed again.
    #[inline]
    pub(super) fn changed(&mut self, ix: Ix) {
        if let Some(d) = self.digests.as_deref_mut() {
            d.mark(bucket(&self.ids.id(self.nodes[ix as usize].row)));
        }
        self.accessed_by_current(ix);
    }

    /// Node `ix` was set back as it was (a rewind): its bucket's digest
    /// must be computed again.
    pub(super) fn changed_digest(&mut self, ix: Ix) {
        if let Some(d) = self.digests.as_deref_mut() {
            d.mark(bucket(&self.ids.id(self.nodes[ix as usize].row)));
        }
    }

    /// Node `ix` is about to be taken off (a rewind): out of its bucket.
    pub(super) fn removed(&mut self, ix: Ix) {
        let nodes = &self.nodes;
        if let Some(d) = self.digests.as_deref_mut() {
            let b = bucket(&self.ids.id(nodes[ix as usize].row));
            d.members[b].retain(|&m| m != ix);
            d.mark(b);
        }
    }

    /// An event was held as pending, or released.
    pub(super) fn pending_changed(&mut self) {
        if let Some(d) = self.digests.as_deref_mut() {
            d.pending = None;
            d.root = None;
        }
    }

    /// Node `ix` was just added.
    pub(super) fn added(&mut self, ix: Ix) {
        let nodes = &self.nodes;
        if let Some(d) = self.digests.as_deref_mut() {
            let ids = self.ids.read();
            let id = ids.id(nodes[ix as usize].row);
            let b = bucket(&id);
            let members = &mut d.members[b];
            let at = members.partition_point(|&m| ids.id(nodes[m as usize].row) < id);
            // Grown by an eighth, not doubled: a bucket holds a 4096th of
            // the graph, so growing copies a few hundred bytes.
            if members.len() == members.capacity() {
                members.reserve_exact((members.len() / 8).max(4));
            }
            members.insert(at, ix);
            d.mark(b);
        }
    }

    /// The graph digest:
    ///
    /// ```text
    /// digest         = SHA-256("agora-graph-digest/1" || u64 nodes
    ///                    || bucket digest 0 .. bucket digest 4095 || pending digest)
    /// bucket digest  = SHA-256(snapshot bytes of the bucket's nodes, ascending by id)
    /// pending digest = SHA-256(u32 pending || pending ids in log order)
    /// ```
    ///
    /// A node is in bucket `(id[0] << 4) | (id[1] >> 4)`. The first call
    /// hashes every node and from then on the graph keeps track of the
    /// buckets its applies change, so a later call hashes only those (and
    /// the 128 KiB of bucket digests); nothing, if nothing was applied since.
    pub fn digest(&mut self) -> [u8; 32] {
        use sha2::Digest;
        let nodes = &self.nodes;
        let d = self.digests.get_or_insert_with(|| Box::new(Digests::of(nodes, &self.ids)));
        if let Some(root) = d.root {
            return root;
        }
        let dirty = std::mem::take(&mut d.dirty_list);
        let members = &d.members;
        let ids = self.ids.read();
        let ids = &ids;
        let fresh: Vec<[u8; 32]> = dirty
            .par_iter()
            .map_init(Vec::new, |buf, &b| {
                buf.clear();
                for &ix in &members[b as usize] {
                    write_snapshot_node(nodes, ids, ix, buf);
                }
                agora_core::sha256(buf)
            })
            .collect();
        for (&b, h) in dirty.iter().zip(fresh) {
            d.hashes[b as usize] = h;
            d.dirty[b as usize] = false;
        }
        let mut hasher = sha2::Sha256::new();
        hasher.update(DIGEST_TAG);
        hasher.update((nodes.len() as u64).to_be_bytes());
        for h in &d.hashes {
            hasher.update(h);
        }
        let waiting = &self.waiting;
        let pending = *d.pending.get_or_insert_with(|| {
            let mut held: Vec<(LogPosition, EntryId)> = waiting.values().flatten().map(|e| (e.pos, e.id)).collect();
            held.sort_unstable();
            let mut bytes = Vec::with_capacity(4 + held.len() * 32);
            bytes.extend_from_slice(&(held.len() as u32).to_be_bytes());
            for (_, id) in held {
                bytes.extend_from_slice(id.as_bytes());
            }
            agora_core::sha256(&bytes)
        });
        hasher.update(pending);
        let root: [u8; 32] = hasher.finalize().into();
        d.root = Some(root);
        root
    }

    /// The bucket digests as of the last [`Graph::digest`] (`None` before
    /// the first), bucket 0 first. A reader that keeps a copy learns, by
    /// comparing the next ones with it, which buckets' nodes changed in
    /// between without looking at the nodes: the Automerge publisher writes
    /// only those (`crates/agora-automerge`). Text is not in the snapshot
    /// bytes, so a change of text alone (a redaction, which makes a live view
    /// replay) does not show here.
    pub fn bucket_digests(&self) -> Option<&[[u8; 32]]> {
        self.digests.as_deref().filter(|d| d.root.is_some()).map(|d| &d.hashes[..])
    }

    /// The nodes of digest bucket `b`, ascending by id (empty before the
    /// first [`Graph::digest`], which places them).
    pub fn bucket_nodes(&self, b: usize) -> impl Iterator<Item = NodeRef<'_>> {
        let members = self.digests.as_deref().and_then(|d| d.members.get(b)).map_or(&[][..], |m| &m[..]);
        members.iter().map(move |&ix| self.node_ref(&self.nodes[ix as usize]))
    }

    /// The digest bucket of a node id: its first 12 bits.
    pub fn bucket_of(id: &EntryId) -> usize {
        bucket(id)
    }

    /// The position of the last event applied in log order (`None` before
    /// the first): an event that sorts before it cannot be applied in place.
    pub fn last_position(&self) -> Option<LogPosition> {
        self.last_key.map(|(pos, _)| pos)
    }
}
