//! OTLP trace requests read into what Agora records.
//!
//! A framework's tracer (OpenTelemetry's GenAI conventions, or a processor
//! that speaks them) sends spans to a node. [`decode`] reads a request
//! (protobuf or JSON); [`plan`] names, for each span, the agent of the
//! node's keyring that signs it and what it records: an action (the span
//! itself: operation, names, causal links, hashes of what went in and came
//! out) and, when the span carries one, a reasoning move. The mapping is the
//! table of `protocol-spec/otlp.md`, which also lists what is left out.
//!
//! Nothing here touches a store or a socket: the node checks the plan
//! against its graph, records it as one durable batch, and answers with
//! [`response`], which reports the spans it refused (OTLP's partial
//! success).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod decode;
mod plan;

pub use decode::{DecodeError, Encoding, REQUEST_BYTES_MAX, SPANS_PER_REQUEST_MAX, decode, encode_response, response};
pub use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
pub use plan::{ActionDraft, FIELD_BYTES_MAX, Mapping, MemoryDraft, MemoryWrite, MoveDraft, Plan, Planned, Refused, TEXT_BYTES_MAX, plan};
