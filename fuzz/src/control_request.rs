//! The `control_request` target: the control channel's request bodies and
//! output frames.

/// The control channel (`agora-command-line`'s wire): a `POST /v1/command`
/// body splits into a request line and the command's standard input; one
/// that decodes re-encodes to the same request and input, and its argv is
/// parsed by the CLI's own grammar (accepted or refused with clap's error,
/// never a panic: clap's debug checks of the grammar run here too). The
/// first five bytes, read as an output frame's head, give a known kind and
/// a length within the limit, or are refused.
pub fn control_request(data: &[u8]) {
    use agora_command_line::wire;
    if let Some(head) = data.get(..5) {
        let head: [u8; 5] = head.try_into().expect("five bytes");
        if let Ok((kind, len)) = wire::frame_head(head) {
            assert!(matches!(kind, wire::FRAME_STDOUT | wire::FRAME_STDERR | wire::FRAME_EXIT));
            assert!(len <= wire::FRAME_BYTES_MAX);
            let again = wire::frame(kind, &data[5..]);
            assert_eq!(wire::frame_head(again[..5].try_into().expect("five bytes")), Ok((kind, data.len() - 5)));
        }
    }
    if let Ok((request, stdin)) = wire::decode_request(data) {
        let body = wire::encode_request(&request, stdin);
        let (back, input) = wire::decode_request(&body).expect("a re-encoded request decodes");
        assert_eq!(back, request);
        assert_eq!(input, stdin);
        let _ = wire::parse_args(&request.argv);
    }
}
