//! The scanner agrees with serde_json on every text both can speak to (no lone surrogates, no
//! numbers beyond f64), and the member edits keep objects valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pith_store::scan;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let ours = scan::scan(data);
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let theirs = serde::de::IgnoredAny::deserialize(&mut de).and_then(|_| de.end());
    let comparable = !text.contains("\\u") && !text.contains(['e', 'E']);
    if comparable {
        assert_eq!(ours.is_ok(), theirs.is_ok(), "{text:?}");
    }
    if let Ok(s) = ours
        && s.is_object
    {
        let raw = s.value.of(text);
        for (k, v) in [("id", "\"x\""), ("parentId", "null"), ("new", "[1,{}]")] {
            let edited = scan::set_member(raw, k, v).expect("an object");
            assert!(scan::scan(edited.as_bytes()).is_ok(), "{edited:?}");
            let removed = scan::remove_member(&edited, k).expect("an object");
            assert!(scan::scan(removed.as_bytes()).is_ok(), "{removed:?}");
        }
    }
});

use serde::Deserialize;
