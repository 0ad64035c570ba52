//! Replaying parts of view chains into one reasoning graph, for the merged
//! view and for perspectives.
//!
//! The graph must see its events in log order, (timestamp, author, seq, id).
//! On view chains that order has a compact key: chains are indexed in author
//! order, and a view chain holds one item per seq, so (timestamp, chain index,
//! seq) orders the events with no ties and no id, in 24 bytes a key instead
//! of 80. Each chain's keys are already sorted, so sorting them is a merge.
//!
//! Then the payloads are decoded on a second thread while this one applies
//! the batches decoded before. Decoding needs nothing from the graph and takes
//! about three quarters as long as applying (100 agents x 10,000 events,
//! 730k reasoning events: about 0.28 s and 0.36 s here), so the two together
//! take little more than applying alone. Other work that reads the same
//! [`Merge`] (the evaluation of merge events, in [`Merge::compute_with_view`])
//! runs in the gaps of both threads, never delaying the applying one.

use crate::merge::{Merge, NONE};
use agora_graph::{Graph, LogEvent};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, TryRecvError, TrySendError};

/// Events decoded, sent and applied together (about 0.9 MB decoded).
const BATCH: usize = 4 * 1024;
/// Events whose memory is loaded together before they are decoded.
const WARM: usize = 64;
/// Batches the decoder may run ahead of the graph.
const AHEAD: usize = 4;

/// One reasoning event of a view chain, by its place in log order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct LogKey {
    timestamp_ms: u64,
    /// Chain index in the high half, seq in the low half.
    chain_seq: u64,
    item: u32,
}

impl Merge<'_> {
    /// The reasoning graph of the view chains' prefixes `parts`: (chain index,
    /// length of the prefix), leaving out merge events and the items `skip`
    /// says to.
    pub(crate) fn replay_view_prefixes(&self, parts: &[(u32, usize)], skip: impl Fn(u32) -> bool) -> Graph {
        self.replay_beside(&self.log_keys(parts, skip), 0, |_| ()).0
    }

    /// The keys of the reasoning events on `parts`, in log order.
    fn log_keys(&self, parts: &[(u32, usize)], skip: impl Fn(u32) -> bool) -> Vec<LogKey> {
        let mut keys: Vec<LogKey> = Vec::with_capacity(parts.iter().map(|p| p.1).sum());
        for &(c, upto) in parts {
            let chain = &self.chains[c as usize];
            for (i, &k) in chain.view[..upto].iter().enumerate() {
                let it = &self.items[k as usize];
                if it.record != NONE || skip(k) {
                    continue;
                }
                // seq = i + 1 <= items held < 2^32 (MERGE_ENTRIES_MAX).
                debug_assert_eq!(it.seq(), i as u64 + 1);
                let chain_seq = (u64::from(c) << 32) | (i as u64 + 1);
                keys.push(LogKey { timestamp_ms: it.timestamp_ms, chain_seq, item: k });
            }
        }
        // Each chain's keys are already in order (timestamps never go back
        // along a chain: a link that does is broken, and views stop there),
        // so this is a merge of one sorted run per chain, which the (stable)
        // merge sort finds and uses.
        keys.par_sort();
        keys
    }

    /// The merged graph (as [`Merge::merged_graph`]) and, computed in the gaps
    /// of its replay, `side(i)` for every `i` below `side_tasks`, in order of `i`.
    pub(crate) fn merged_graph_beside<T: Send>(&self, side_tasks: usize, side: impl Fn(usize) -> T + Sync) -> (Graph, Vec<T>) {
        let parts: Vec<(u32, usize)> = self.chains.iter().enumerate().map(|(c, chain)| (c as u32, chain.view.len())).collect();
        self.replay_beside(&self.log_keys(&parts, |_| false), side_tasks, side)
    }

    /// Replay the events of `keys` on this thread while a second thread
    /// decodes them, up to [`AHEAD`] batches ahead; both threads run the side
    /// tasks in their gaps: the decoder when it is that far ahead, this
    /// thread when nothing decoded is waiting. Applying is the one step that
    /// cannot be split, so it takes a side task only when it would otherwise
    /// sit idle.
    fn replay_beside<T: Send>(&self, keys: &[LogKey], side_tasks: usize, side: impl Fn(usize) -> T + Sync) -> (Graph, Vec<T>) {
        let decode = |batch: &[LogKey]| -> Vec<LogEvent> {
            let mut events = Vec::with_capacity(batch.len());
            for keys in batch.chunks(WARM) {
                // Log order visits every chain in turn, so each item, header
                // and payload is a cache miss: load them all first, together.
                for key in keys {
                    std::hint::black_box(self.items[key.item as usize].seq());
                }
                for key in keys {
                    let it = &self.items[key.item as usize];
                    std::hint::black_box((it.signed.header().timestamp_ms, it.payload.and_then(|p| p.first().copied())));
                }
                events.extend(keys.iter().filter_map(|key| {
                    let it = &self.items[key.item as usize];
                    let h = it.signed.header();
                    LogEvent::from_content(it.id(), h.log_position(), it.content())
                }));
            }
            events
        };
        let next_task = AtomicUsize::new(0);
        let take_task = |done: &mut Vec<(usize, T)>| -> bool {
            let i = next_task.fetch_add(1, Ordering::Relaxed);
            if i < side_tasks {
                done.push((i, side(i)));
            }
            i < side_tasks
        };
        let (tx, rx) = mpsc::sync_channel::<Vec<LogEvent>>(AHEAD);
        let (graph, mut done) = std::thread::scope(|scope| {
            let decoder = scope.spawn(|| {
                let mut done = Vec::new();
                for batch in keys.chunks(BATCH) {
                    let mut events = decode(batch);
                    loop {
                        match tx.try_send(events) {
                            Ok(()) => break,
                            Err(TrySendError::Full(back)) if take_task(&mut done) => events = back,
                            Err(TrySendError::Full(back)) => {
                                if tx.send(back).is_err() {
                                    return done;
                                }
                                break;
                            }
                            Err(TrySendError::Disconnected(_)) => return done,
                        }
                    }
                }
                drop(tx);
                while take_task(&mut done) {}
                done
            });
            let mut replay = Graph::ordered_replay(keys.len());
            let mut done = Vec::new();
            let mut in_order = true;
            loop {
                let mut batch = match rx.try_recv() {
                    Ok(batch) => batch,
                    Err(TryRecvError::Empty) if take_task(&mut done) => continue,
                    Err(TryRecvError::Empty) => match rx.recv() {
                        Ok(batch) => batch,
                        Err(_) => break,
                    },
                    Err(TryRecvError::Disconnected) => break,
                };
                if in_order && let Err(e) = replay.apply_batch(&mut batch) {
                    // Chains are indexed in author order and each view chain
                    // has one item per seq, so the keys are the log order.
                    // Were that ever broken, the sorting replay still gives
                    // the graph.
                    debug_assert!(false, "view chain keys out of log order: {e}");
                    in_order = false;
                }
            }
            while take_task(&mut done) {}
            let theirs = decoder.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            done.extend(theirs);
            (if in_order { replay.finish() } else { self.replay_sorting(keys) }, done)
        });
        done.sort_unstable_by_key(|(i, _)| *i);
        debug_assert!(done.iter().enumerate().all(|(k, (i, _))| k == *i) && done.len() == side_tasks);
        (graph, done.into_iter().map(|(_, t)| t).collect())
    }

    /// The same graph by [`Graph::replay_encoded`], which sorts by itself.
    fn replay_sorting(&self, keys: &[LogKey]) -> Graph {
        let log: Vec<_> = keys.iter().map(|k| self.log_item(k.item)).collect();
        Graph::replay_contents(&log)
    }
}
