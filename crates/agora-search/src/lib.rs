//! Full-text search over the reasoning graph's node texts, ranked by BM25
//! (tantivy). The index is a view like any other: built in memory from a
//! [`Graph`], never stored, so it cannot drift from the log.
//!
//! By default superseded and retracted nodes are left out, so a search returns
//! the current state of thinking; every hit carries its status.
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

use agora_core::EntryId;
use agora_graph::{Graph, Status};
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, NumericOptions, STORED, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, TantivyDocument};

/// Largest number of hits one search returns.
pub const LIMIT_MAX: usize = 1000;

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The query text is not valid tantivy query syntax.
    #[error("bad query {query:?}: {reason}")]
    Query {
        /// The query.
        query: String,
        /// Why.
        reason: String,
    },
    /// tantivy failed.
    #[error("search index: {0}")]
    Index(#[from] tantivy::TantivyError),
    /// A node's text could not be read from the store its graph reads
    /// texts from.
    #[error(transparent)]
    Text(#[from] agora_graph::TextUnavailable),
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The node.
    pub id: EntryId,
    /// BM25 score.
    pub score: f32,
    /// The node's status.
    pub status: Status,
    /// The node's kind.
    pub kind: &'static str,
    /// The node's text.
    pub text: String,
}

/// An in-memory BM25 index of a graph's node texts.
pub struct SearchIndex {
    reader: IndexReader,
    parser: QueryParser,
    ordinal: Field,
    ids: Vec<EntryId>,
}

impl SearchIndex {
    /// Index every node of `graph` that has text.
    pub fn build(graph: &Graph) -> Result<Self, SearchError> {
        let mut schema = Schema::builder();
        let text = schema.add_text_field("text", TEXT);
        let ordinal = schema.add_u64_field("ordinal", NumericOptions::default() | STORED);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer_with_num_threads(1, 32 << 20)?;
        let mut ids = Vec::new();
        for node in graph.nodes() {
            let node_text = graph.text(node)?;
            if node_text.is_empty() {
                continue;
            }
            let mut doc = TantivyDocument::default();
            doc.add_text(text, &*node_text);
            doc.add_u64(ordinal, ids.len() as u64);
            writer.add_document(doc)?;
            ids.push(node.id);
        }
        writer.commit()?;
        let reader = index.reader()?;
        let parser = QueryParser::for_index(&index, vec![text]);
        Ok(Self { reader, parser, ordinal, ids })
    }

    /// Search. Leaves out superseded and retracted nodes unless `include_all`.
    pub fn search(&self, graph: &Graph, query: &str, include_all: bool, limit: usize) -> Result<Vec<Hit>, SearchError> {
        let limit = limit.clamp(1, LIMIT_MAX);
        let parsed = self.parser.parse_query(query).map_err(|e| SearchError::Query { query: query.to_string(), reason: e.to_string() })?;
        let searcher = self.reader.searcher();
        // Hidden hits are filtered after ranking, so ask for more until enough
        // visible ones are found or the index is exhausted.
        let mut want = limit;
        loop {
            let top = searcher.search(&parsed, &TopDocs::with_limit(want).order_by_score())?;
            let exhausted = top.len() < want;
            let mut hits = Vec::new();
            for (score, address) in top {
                let doc: TantivyDocument = searcher.doc(address)?;
                let Some(ord) = doc.get_first(self.ordinal).and_then(|v| v.as_u64()) else { continue };
                let Some(node) = self.ids.get(ord as usize).and_then(|id| graph.node(id)) else { continue };
                let status = node.status();
                if !include_all && matches!(status, Status::Superseded | Status::Retracted) {
                    continue;
                }
                hits.push(Hit { id: node.id, score, status, kind: node.kind(), text: graph.text(node)?.into_owned() });
                if hits.len() == limit {
                    return Ok(hits);
                }
            }
            if exhausted || want >= self.ids.len() {
                return Ok(hits);
            }
            want = (want * 4).min(self.ids.len().max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agora_core::AgentId;
    use agora_graph::{Event, LogEvent, LogPosition};

    fn ev(n: u8, event: Event) -> LogEvent {
        let id = EntryId([n; 32]);
        LogEvent::from_payload(id, LogPosition { timestamp_ms: n as u64, author: AgentId([1; 32]), seq: n as u64 }, Some(&event.encode()))
    }

    #[test]
    fn bm25_search_hides_superseded_by_default_and_shows_status() {
        let g = Graph::replay(vec![
            ev(1, Event::Proposition { text: "usage-based pricing for everyone".into() }),
            ev(2, Event::Contradiction { target: EntryId([1; 32]), text: "procurement cannot budget usage-based costs".into() }),
            ev(
                3,
                Event::Refinement {
                    target: EntryId([1; 32]),
                    resolves: vec![EntryId([2; 32])],
                    text: "seat-based enterprise, usage-based self-serve pricing".into(),
                },
            ),
            ev(4, Event::Question { text: "what about hiring?".into() }),
        ]);
        let index = SearchIndex::build(&g).unwrap();
        let hits = index.search(&g, "pricing", false, 10).unwrap();
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![EntryId([3; 32])]);
        assert_eq!(hits[0].status, Status::Resolved);
        let all = index.search(&g, "pricing", true, 10).unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().any(|h| h.status == Status::Superseded));
        let usage = index.search(&g, "usage", false, 10).unwrap();
        assert_eq!(usage.len(), 2, "the contradiction and the refinement");
        assert!(index.search(&g, "hiring", false, 1).unwrap()[0].kind == "question");
        assert!(matches!(index.search(&g, "pricing AND (", false, 10), Err(SearchError::Query { .. })));
    }
}
