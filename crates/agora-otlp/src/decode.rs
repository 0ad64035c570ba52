//! A request's bytes to its message, and the answer's message to bytes, in
//! either of OTLP/HTTP's encodings.

use opentelemetry_proto::tonic::collector::trace::v1::{ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse};
use prost::Message;

/// Largest request body read, in bytes. OpenTelemetry's batch processors
/// send at most 512 spans a request by default, well under 1 MiB.
pub const REQUEST_BYTES_MAX: usize = 16 << 20;

/// Most spans one request may carry: what one durable batch records.
pub const SPANS_PER_REQUEST_MAX: usize = 20_000;

/// OTLP/HTTP's two encodings of a request and its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-protobuf`: the protobuf messages (what OpenTelemetry's
    /// SDKs send by default).
    Protobuf,
    /// `application/json`: OTLP/JSON (ids in hex, 64-bit integers as strings).
    Json,
}

impl Encoding {
    /// The encoding a request's `Content-Type` names.
    pub fn of_content_type(content_type: Option<&str>) -> Result<Self, DecodeError> {
        let base = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match base.as_str() {
            "application/x-protobuf" | "application/protobuf" => Ok(Encoding::Protobuf),
            "application/json" => Ok(Encoding::Json),
            _ => Err(DecodeError::UnsupportedType(base)),
        }
    }

    /// The `Content-Type` of an answer in this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// Why a request could not be read at all (the whole request is refused:
/// OTLP/HTTP's 400, or 415 for an unsupported type, 413 for a large body).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Neither protobuf nor JSON.
    #[error("content type {0:?} is not OTLP/HTTP: send application/x-protobuf or application/json")]
    UnsupportedType(String),
    /// Over [`REQUEST_BYTES_MAX`].
    #[error("the request is {0} bytes, more than {REQUEST_BYTES_MAX}: send smaller batches")]
    TooLarge(usize),
    /// Not a trace export request in the encoding it names.
    #[error("the body is not an OTLP trace export request ({encoding}): {reason}")]
    Malformed {
        /// The encoding it was read as.
        encoding: &'static str,
        /// The decoder's complaint.
        reason: String,
    },
    /// Over [`SPANS_PER_REQUEST_MAX`].
    #[error("the request carries {0} spans, more than {SPANS_PER_REQUEST_MAX}: send smaller batches")]
    TooManySpans(usize),
}

/// Read a trace export request.
pub fn decode(body: &[u8], encoding: Encoding) -> Result<ExportTraceServiceRequest, DecodeError> {
    if body.len() > REQUEST_BYTES_MAX {
        return Err(DecodeError::TooLarge(body.len()));
    }
    let request = match encoding {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body).map_err(|e| DecodeError::Malformed { encoding: "protobuf", reason: e.to_string() })?,
        Encoding::Json => serde_json::from_slice(body).map_err(|e| DecodeError::Malformed { encoding: "JSON", reason: e.to_string() })?,
    };
    let spans: usize = request.resource_spans.iter().flat_map(|r| &r.scope_spans).map(|s| s.spans.len()).sum();
    if spans > SPANS_PER_REQUEST_MAX {
        return Err(DecodeError::TooManySpans(spans));
    }
    Ok(request)
}

/// The answer to a request: full success, or the number of spans refused
/// and why (`message` may also carry a warning when none was refused).
pub fn response(rejected: u64, message: String) -> ExportTraceServiceResponse {
    if rejected == 0 && message.is_empty() {
        return ExportTraceServiceResponse { partial_success: None };
    }
    ExportTraceServiceResponse { partial_success: Some(ExportTracePartialSuccess { rejected_spans: rejected as i64, error_message: message }) }
}

/// An answer's bytes in `encoding`.
pub fn encode_response(response: &ExportTraceServiceResponse, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Protobuf => response.encode_to_vec(),
        // A message of strings and integers always serializes.
        Encoding::Json => serde_json::to_vec(response).unwrap_or_else(|_| b"{}".to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_name_their_encoding() {
        assert_eq!(Encoding::of_content_type(Some("application/x-protobuf")).unwrap(), Encoding::Protobuf);
        assert_eq!(Encoding::of_content_type(Some("Application/JSON; charset=utf-8")).unwrap(), Encoding::Json);
        assert!(matches!(Encoding::of_content_type(Some("text/plain")), Err(DecodeError::UnsupportedType(t)) if t == "text/plain"));
        assert!(Encoding::of_content_type(None).is_err());
    }

    #[test]
    fn garbage_and_oversize_are_refused_by_name() {
        assert!(matches!(decode(b"\xff\xff\xff", Encoding::Protobuf), Err(DecodeError::Malformed { encoding: "protobuf", .. })));
        assert!(matches!(decode(b"{\"resourceSpans\": 3}", Encoding::Json), Err(DecodeError::Malformed { encoding: "JSON", .. })));
        assert!(matches!(decode(&vec![0u8; REQUEST_BYTES_MAX + 1], Encoding::Protobuf), Err(DecodeError::TooLarge(_))));
        assert!(decode(b"", Encoding::Protobuf).unwrap().resource_spans.is_empty());
    }

    #[test]
    fn partial_success_is_said_only_when_there_is_something_to_say() {
        assert!(response(0, String::new()).partial_success.is_none());
        let r = response(2, "two spans name no agent".into());
        let back = ExportTraceServiceResponse::decode(encode_response(&r, Encoding::Protobuf).as_slice()).unwrap();
        assert_eq!(back.partial_success.unwrap().rejected_spans, 2);
        let json: serde_json::Value = serde_json::from_slice(&encode_response(&r, Encoding::Json)).unwrap();
        assert_eq!(json["partialSuccess"]["errorMessage"], "two spans name no agent");
    }
}
