//! Any bytes after a v1 header: migration never panics, every record it keeps becomes an
//! entry with an id, and the rewritten file loads again without a second migration, with the
//! same entries.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pith_store::load::{Loaded, load_from};

fuzz_target!(|data: &[u8]| {
    let mut file = br#"{"type":"session","id":"fuzz","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/f"}"#.to_vec();
    file.push(b'\n');
    file.extend_from_slice(data);
    let mut n = 0u64;
    let mut ids = || {
        n += 1;
        format!("{n:08x}")
    };
    let path = std::path::Path::new("fuzz.jsonl");
    let Ok(Loaded::Log(log)) = load_from(&file[..], path, &mut ids) else { return };
    let lines = log.rewrite.expect("a v1 file is migrated");
    assert!(log.header.version() >= 3.0);
    let rewritten = lines.join("\n") + "\n";
    let Ok(Loaded::Log(again)) = load_from(rewritten.as_bytes(), path, &mut ids) else {
        panic!("the migrated file does not load")
    };
    assert!(again.rewrite.is_none(), "a migrated file needs no second migration");
    let a: Vec<&str> = log.entries.iter().map(|e| e.raw()).collect();
    let b: Vec<&str> = again.entries.iter().map(|e| e.raw()).collect();
    assert_eq!(a, b);
});
