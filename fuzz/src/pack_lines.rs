//! The `pack_lines` target: pack files.

use agora_core::verify::verify_payload;

/// `agora_core::pack`: the input as a pack file (UTF-8, lines). The first line
/// goes to `parse_header_line`, every other to `parse_entry_line`. An accepted
/// line's entry is the canonical encoding of the entry it decodes to (the hex
/// in the line is exactly `entry.encode()`), its payload matches the header,
/// and the line `entry_line` writes for it parses back to the same thing.
pub fn pack_lines(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    agora_core::pack::parse_header_line(&agora_core::pack::header_line()).expect("our own header line");
    for (i, line) in text.split('\n').enumerate() {
        if i == 0 {
            let _ = agora_core::pack::parse_header_line(line);
            continue;
        }
        let Ok((entry, payload)) = agora_core::pack::parse_entry_line(i + 1, line) else { continue };
        let value: serde_json::Value = serde_json::from_str(line).expect("an accepted line is JSON");
        let hex_entry = value["entry"].as_str().expect("an accepted line has an entry string");
        assert_eq!(hex::decode(hex_entry).ok(), Some(entry.encode()), "pack entry not canonical");
        assert_eq!(value["id"].as_str(), Some(entry.id().to_string().as_str()));
        if let Some(p) = &payload {
            assert_eq!(verify_payload(&entry, p), Ok(()));
        }
        let ours = agora_core::pack::entry_line(&entry, payload.as_deref());
        let back = agora_core::pack::parse_entry_line(i + 1, &ours).expect("our own entry line parses");
        assert_eq!(back, (entry, payload));
        assert_eq!(agora_core::pack::entry_line(&back.0, back.1.as_deref()), ours);
    }
}
