//! A short list kept inline: its first `N` items in place, more on the heap.
//!
//! An event's references ([`crate::event::RefList`]) and the node positions a
//! replay resolves them to (the graph's `Targets`) are a handful per event,
//! and a replay builds one of each for every event, so neither may allocate
//! in the common case. The invariant: the items are `inline[..len]` while
//! `more` is empty, and all of `more` once an item past `N` arrives (the
//! inline ones are copied over then), so the list derefs to one slice either
//! way. One type for both lists, so the two cannot drift apart.

/// Up to `N` items inline, more on the heap (see the module header).
#[derive(Clone, Debug)]
pub(crate) struct InlineList<T, const N: usize> {
    inline: [T; N],
    len: usize,
    more: Vec<T>,
}

impl<T: Copy + Default, const N: usize> Default for InlineList<T, N> {
    fn default() -> Self {
        Self { inline: [T::default(); N], len: 0, more: Vec::new() }
    }
}

impl<T: Copy, const N: usize> InlineList<T, N> {
    pub(crate) fn push(&mut self, item: T) {
        if self.len < N && self.more.is_empty() {
            self.inline[self.len] = item;
            self.len += 1;
        } else {
            if self.more.is_empty() {
                self.more.extend_from_slice(&self.inline[..self.len]);
            }
            self.more.push(item);
        }
    }
}

impl<T, const N: usize> std::ops::Deref for InlineList<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if self.more.is_empty() { &self.inline[..self.len] } else { &self.more }
    }
}
