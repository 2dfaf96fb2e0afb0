//! pi's built-in tools, checked against what pi 0.73.1 produces for the
//! same calls (expected texts were taken from running pi's own tool code).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pith_events::{ContentBlock, ImageContent};
use pith_tests::files::{dir, write};
use pith_tools::tool::{Tool, ToolContext, ToolOutput};
use pith_tools::{OutputDir, ShellConfig, execute_bash, execute_bash_with};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn context(cwd: &Path) -> (ToolContext, CancellationToken) {
    let tx = CancellationToken::new();
    let rx = tx.clone();
    (ToolContext::new(cwd, rx, "call_1"), tx)
}

fn tool(name: &str) -> Arc<dyn Tool> {
    pith_tools::tool_by_name(name).unwrap_or_else(|| panic!("no tool {name}"))
}

async fn call(name: &str, cwd: &Path, args: Value) -> Result<ToolOutput, String> {
    let (ctx, _abort) = context(cwd);
    tool(name).run(args, ctx).await.map_err(|e| e.to_string())
}

/// A result as pi would serialize `{content, details}`.
fn as_json(out: &ToolOutput) -> Value {
    json!({ "content": out.content, "details": out.details })
}

fn text_result(text: &str) -> Value {
    json!({ "content": [{"type": "text", "text": text}], "details": null })
}

fn read_string(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn ok<E: std::fmt::Display>(r: Result<ToolOutput, E>) -> ToolOutput {
    r.unwrap_or_else(|e| panic!("tool failed: {e}"))
}

fn err<E: std::fmt::Display>(r: Result<ToolOutput, E>) -> String {
    match r {
        Ok(o) => panic!("expected an error, got {}", as_json(&o)),
        Err(e) => e.to_string(),
    }
}

fn text_of(out: &ToolOutput) -> &str {
    match out.content.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("expected text, got {other:?}"),
    }
}

fn ten_lines(cwd: &Path) {
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(&cwd.join("ten.txt"), text);
}

#[test]
fn specs_are_pis() {
    let specs: Vec<Value> = pith_tools::builtin_tools()
        .iter()
        .map(|t| {
            let s = t.spec();
            json!({"name": s.name, "description": s.description, "parameters": s.parameters})
        })
        .collect();
    let expected = json!([
      {
        "name": "read",
        "description": "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.",
        "parameters": {"type": "object", "required": ["path"], "properties": {
          "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
          "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
          "limit": {"type": "number", "description": "Maximum number of lines to read"}}}
      },
      {
        "name": "bash",
        "description": "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.",
        "parameters": {"type": "object", "required": ["command"], "properties": {
          "command": {"type": "string", "description": "Shell command to execute"},
          "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}}}
      },
      {
        "name": "edit",
        "description": "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.",
        "parameters": {"type": "object", "required": ["path", "edits"], "properties": {
          "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
          "edits": {"type": "array", "items": {"type": "object", "required": ["oldText", "newText"], "properties": {
              "oldText": {"type": "string", "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},
              "newText": {"type": "string", "description": "Replacement text for this targeted edit."}}
            },
            "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."}}}
      },
      {
        "name": "write",
        "description": "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
        "parameters": {"type": "object", "required": ["path", "content"], "properties": {
          "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
          "content": {"type": "string", "description": "Content to write to the file"}}}
      }
    ]);
    assert_eq!(Value::Array(specs.clone()), expected);
    // Key order is part of what the model is sent.
    assert_eq!(
        serde_json::to_string(&specs[0]["parameters"]).unwrap_or_default(),
        serde_json::to_string(&expected[0]["parameters"]).unwrap_or_default()
    );
    // grep, find and ls exist but are not in the default set (tests/search.rs checks them).
    assert!(pith_tools::tool_by_name("grep").is_some());
    assert!(pith_tools::tool_by_name("rg").is_none());
    assert_eq!(pith_tools::builtin_tools().len(), 4);
}

#[tokio::test]
async fn read_offset_and_limit() {
    let d = dir();
    ten_lines(d.path());
    let out = ok(call(
        "read",
        d.path(),
        json!({"path": "ten.txt", "offset": 3, "limit": 2}),
    )
    .await);
    assert_eq!(
        as_json(&out),
        text_result("line 3\nline 4\n\n[7 more lines in file. Use offset=5 to continue.]")
    );
    let out = ok(call("read", d.path(), json!({"path": "ten.txt", "offset": 9})).await);
    assert_eq!(as_json(&out), text_result("line 9\nline 10\n"));
    let out = ok(call(
        "read",
        d.path(),
        json!({"path": "ten.txt", "offset": 10, "limit": 5}),
    )
    .await);
    assert_eq!(as_json(&out), text_result("line 10\n"));
    // Numbers sent as strings are converted, as pi's validation does.
    let out = ok(call(
        "read",
        d.path(),
        json!({"path": "ten.txt", "offset": "3", "limit": 1}),
    )
    .await);
    assert_eq!(
        as_json(&out),
        text_result("line 3\n\n[8 more lines in file. Use offset=4 to continue.]")
    );
    assert_eq!(
        err(call("read", d.path(), json!({"path": "ten.txt", "offset": 12})).await),
        "Offset 12 is beyond end of file (11 lines total)"
    );
}

#[tokio::test]
async fn read_truncates_by_lines_with_continuation() {
    let d = dir();
    let lines: Vec<String> = (1..=2500).map(|i| format!("L{i}")).collect();
    write(&d.path().join("big.txt"), lines.join("\n"));
    let out = ok(call("read", d.path(), json!({"path": "big.txt"})).await);
    let kept = lines[..2000].join("\n");
    let expected = json!({
        "content": [{"type": "text", "text": format!("{kept}\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]")}],
        "details": {"truncation": {
            "content": kept, "truncated": true, "truncatedBy": "lines", "totalLines": 2500,
            "totalBytes": 13892, "outputLines": 2000, "outputBytes": 10892, "lastLinePartial": false,
            "firstLineExceedsLimit": false, "maxLines": 2000, "maxBytes": 51200}}
    });
    assert_eq!(as_json(&out), expected);
}

#[tokio::test]
async fn read_truncates_by_bytes_and_long_first_line() {
    let d = dir();
    let lines: Vec<String> = (1..=100).map(|i| format!("{i:x<1000}")).collect();
    write(&d.path().join("wide.txt"), lines.join("\n"));
    let out = ok(call("read", d.path(), json!({"path": "wide.txt", "offset": 2})).await);
    let kept = lines[1..52].join("\n");
    assert_eq!(
        text_of(&out),
        format!("{kept}\n\n[Showing lines 2-52 of 100 (50.0KB limit). Use offset=53 to continue.]")
    );
    let mut t = out.details["truncation"].clone();
    t["content"] = json!("");
    assert_eq!(
        t,
        json!({"content": "", "truncated": true, "truncatedBy": "bytes", "totalLines": 99, "totalBytes": 99098,
               "outputLines": 51, "outputBytes": 51050, "lastLinePartial": false, "firstLineExceedsLimit": false,
               "maxLines": 2000, "maxBytes": 51200})
    );

    write(
        &d.path().join("oneline.txt"),
        format!("{}\nshort\n", "a".repeat(60000)),
    );
    let out = ok(call("read", d.path(), json!({"path": "oneline.txt"})).await);
    assert_eq!(
        as_json(&out),
        json!({
            "content": [{"type": "text", "text": "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' oneline.txt | head -c 51200]"}],
            "details": {"truncation": {
                "content": "", "truncated": true, "truncatedBy": "bytes", "totalLines": 3, "totalBytes": 60007,
                "outputLines": 0, "outputBytes": 0, "lastLinePartial": false, "firstLineExceedsLimit": true,
                "maxLines": 2000, "maxBytes": 51200}}
        })
    );
}

#[tokio::test]
async fn read_errors_are_nodes() {
    let d = dir();
    std::fs::create_dir(d.path().join("sub")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        err(call("read", d.path(), json!({"path": "nope/missing.txt"})).await),
        format!(
            "ENOENT: no such file or directory, access '{}/nope/missing.txt'",
            d.path().display()
        )
    );
    assert_eq!(
        err(call("read", d.path(), json!({"path": "sub"})).await),
        "EISDIR: illegal operation on a directory, read"
    );
    assert_eq!(
        err(call("read", d.path(), json!({"path": ["a"]})).await),
        "Validation failed for tool \"read\":\n  - path: expected string, got array\n\nReceived arguments:\n{\n  \"path\": [\n    \"a\"\n  ]\n}"
    );
}

#[tokio::test]
async fn read_non_utf8_replaces_invalid_bytes() {
    let d = dir();
    write(
        &d.path().join("bin.txt"),
        [0x61, 0xff, 0x62, 0xc3, 0x0a, 0xe2, 0x82, 0x63],
    );
    let out = ok(call("read", d.path(), json!({"path": "bin.txt"})).await);
    assert_eq!(as_json(&out), text_result("a\u{FFFD}b\u{FFFD}\n\u{FFFD}c"));
}

/// A valid 1×1 RGBA PNG.
const PIXEL_PNG: &str = "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f00050001ff89993d1d0000000049454e44ae426082";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn read_image_gives_an_image_block() {
    let d = dir();
    write(&d.path().join("pix.png"), unhex(PIXEL_PNG));
    // The `@` of an `@file` mention is dropped, as pi does.
    let out = ok(call("read", d.path(), json!({"path": "@pix.png"})).await);
    assert_eq!(
        out.content,
        vec![
            ContentBlock::text("Read image file [image/png]"),
            ContentBlock::Image(ImageContent {
                data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==".to_owned(),
                mime_type: "image/png".to_owned(),
            }),
        ]
    );
    assert_eq!(out.details, Value::Null);

    // Sniffed as PNG but undecodable: pi omits it.
    write(&d.path().join("fake.png"), &unhex(PIXEL_PNG)[..20]);
    let out = ok(call("read", d.path(), json!({"path": "fake.png"})).await);
    assert_eq!(
        as_json(&out),
        text_result(
            "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]"
        )
    );
}

/// pi 1.6.0 marks an image read for a model without image input (the result pi gave for this
/// file and these models).
#[tokio::test]
async fn read_marks_images_for_a_model_without_image_input() {
    let d = dir();
    write(&d.path().join("pix.png"), unhex(PIXEL_PNG));
    for (model, details) in [
        (
            Some(("text-only", false)),
            json!({"imageUnsupportedByModel": "text-only"}),
        ),
        (Some(("vision", true)), Value::Null),
        (None, Value::Null),
    ] {
        let (mut ctx, _abort) = context(d.path());
        ctx.model = model.map(|(id, accepts_images)| pith_tools::ToolModel {
            id: id.to_owned(),
            accepts_images,
        });
        let out = ok(tool("read").run(json!({"path": "pix.png"}), ctx).await);
        assert_eq!(out.content.len(), 2, "{model:?}");
        assert_eq!(out.details, details, "{model:?}");
    }
    // A text file is never marked.
    write(&d.path().join("a.txt"), "hi");
    let (mut ctx, _abort) = context(d.path());
    ctx.model = Some(pith_tools::ToolModel {
        id: "text-only".to_owned(),
        accepts_images: false,
    });
    let out = ok(tool("read").run(json!({"path": "a.txt"}), ctx).await);
    assert_eq!(as_json(&out), text_result("hi"));
}

/// A file that sets the clipboard (OSC 52) or the title (OSC 0) when printed raw.
const HOSTILE: &str = "safe \u{1b}]52;c;aGVsbG8=\u{7}text \u{1b}]0;owned\u{1b}\\end\n";

#[tokio::test]
async fn escape_sequences_never_reach_a_terminal_live() {
    let d = dir();
    write(&d.path().join("evil.txt"), HOSTILE);
    // The bash and read tools give the model the bytes as they are, as pi 1.6.0 does (they
    // travel JSON-escaped); a frontend prints them through for_terminal.
    let out = ok(call("bash", d.path(), json!({"command": "cat evil.txt"})).await);
    assert_eq!(text_of(&out), HOSTILE);
    let out = ok(call("read", d.path(), json!({"path": "evil.txt"})).await);
    assert_eq!(text_of(&out), HOSTILE);
    assert!(
        serde_json::to_string(&as_json(&out))
            .unwrap_or_default()
            .contains("\\u001b]52")
    );
    assert_eq!(
        pith_tools::sanitize::for_terminal(text_of(&out)),
        "safe text end\n"
    );

    // User bash (`!cat`) output is cleaned before it is stored or shown, also when a
    // sequence arrives split over two chunks.
    let outputs = OutputDir::in_dir(d.path());
    let abort = CancellationToken::new();
    let (chunk_tx, mut chunk_rx) = mpsc::unbounded_channel();
    let result = execute_bash_with(
        "cat evil.txt; printf 'a\\033]52;c;aGk'; sleep 0.2; printf '=\\007b\\n'",
        d.path(),
        &ShellConfig::default(),
        &outputs,
        abort,
        Some(chunk_tx),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(result.output, "safe text end\nab\n");
    let mut chunks = String::new();
    while let Ok(c) = chunk_rx.try_recv() {
        assert!(!c.contains('\u{1b}') && !c.contains('\u{7}'), "{c:?}");
        chunks.push_str(&c);
    }
    assert_eq!(chunks, "safe text end\nab\n");
}

#[tokio::test]
async fn read_resizes_a_wide_image() {
    let d = dir();
    let img = image::RgbImage::from_fn(3000, 100, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 7])
    });
    img.save(d.path().join("wide.png"))
        .unwrap_or_else(|e| panic!("{e}"));
    let out = ok(call("read", d.path(), json!({"path": "wide.png"})).await);
    assert_eq!(
        out.content.first(),
        Some(&ContentBlock::text(
            "Read image file [image/png]\n[Image: original 3000x100, displayed at 2000x67. Multiply coordinates by 1.50 to map to original image.]"
        ))
    );
    let Some(ContentBlock::Image(image)) = out.content.get(1) else {
        panic!("no image block: {:?}", out.content.get(1));
    };
    assert_eq!(image.mime_type, "image/png");
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&image.data)
        .unwrap_or_default();
    let decoded = image::load_from_memory(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((decoded.width(), decoded.height()), (2000, 67));
}

#[tokio::test]
async fn write_creates_parent_directories() {
    let d = dir();
    let out = ok(call(
        "write",
        d.path(),
        json!({"path": "a/b/c.txt", "content": "héllo\n"}),
    )
    .await);
    // pi counts UTF-16 units (`content.length`), so `é` is 1.
    assert_eq!(
        as_json(&out),
        text_result("Successfully wrote to a/b/c.txt")
    );
    assert_eq!(read_string(&d.path().join("a/b/c.txt")), "héllo\n");

    std::fs::create_dir(d.path().join("sub")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        err(call("write", d.path(), json!({"path": "sub", "content": "x"})).await),
        format!(
            "EISDIR: illegal operation on a directory, open '{}/sub'",
            d.path().display()
        )
    );
    assert_eq!(
        err(call("write", d.path(), json!({})).await),
        "Validation failed for tool \"write\":\n  - path: missing\n  - content: missing\n\nReceived arguments:\n{}"
    );
}

const EDIT_FILE: &str = "fn main() {\n    println!(\"hi\");\n}\n// a\n// b\n// c\n// d\n// e\n// f\n// g\n// h\n// i\n// j\nend\n";

#[tokio::test]
async fn edit_replaces_and_reports_a_diff() {
    let d = dir();
    let f = d.path().join("f.txt");
    write(&f, EDIT_FILE);
    let out = ok(call(
        "edit",
        d.path(),
        json!({"path": "f.txt", "edits": [{"oldText": "println!(\"hi\")", "newText": "println!(\"hello\");\n    return"}]}),
    )
    .await);
    assert_eq!(
        as_json(&out),
        json!({
            "content": [{"type": "text", "text": "Successfully replaced 1 block(s) in f.txt."}],
            "details": {
                "diff": "  1 fn main() {\n- 2     println!(\"hi\");\n+ 2     println!(\"hello\");\n+ 3     return;\n  3 }\n  4 // a\n  5 // b\n  6 // c\n    ...",
                // jsdiff 8.0.4's createTwoFilesPatch for the same texts (pi 1.6.0).
                "patch": "--- f.txt\n+++ f.txt\n@@ -1,6 +1,7 @@\n fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n+    return;\n }\n // a\n // b\n // c\n",
                "firstChangedLine": 2
            }
        })
    );
    let out = ok(call(
        "edit",
        d.path(),
        json!({"path": "f.txt", "edits": [{"oldText": "// a", "newText": "// A"}, {"oldText": "end", "newText": "END"}]}),
    )
    .await);
    assert_eq!(
        as_json(&out),
        json!({
            "content": [{"type": "text", "text": "Successfully replaced 2 block(s) in f.txt."}],
            "details": {
                "diff": "  1 fn main() {\n  2     println!(\"hello\");\n  3     return;\n  4 }\n- 5 // a\n+ 5 // A\n  6 // b\n  7 // c\n  8 // d\n  9 // e\n    ...\n 11 // g\n 12 // h\n 13 // i\n 14 // j\n-15 end\n+15 END",
                "patch": "--- f.txt\n+++ f.txt\n@@ -1,9 +1,9 @@\n fn main() {\n     println!(\"hello\");\n     return;\n }\n-// a\n+// A\n // b\n // c\n // d\n // e\n@@ -11,5 +11,5 @@\n // g\n // h\n // i\n // j\n-end\n+END\n",
                "firstChangedLine": 5
            }
        })
    );
    assert_eq!(
        read_string(&f),
        "fn main() {\n    println!(\"hello\");\n    return;\n}\n// A\n// b\n// c\n// d\n// e\n// f\n// g\n// h\n// i\n// j\nEND\n"
    );
    // The older single-edit form still works (pi's prepareArguments).
    let out = ok(call(
        "edit",
        d.path(),
        json!({"path": "f.txt", "oldText": "END", "newText": "end"}),
    )
    .await);
    assert_eq!(text_of(&out), "Successfully replaced 1 block(s) in f.txt.");
}

#[tokio::test]
async fn edit_errors_are_pis() {
    let d = dir();
    let f = d.path().join("f.txt");
    write(&f, EDIT_FILE.replace("// a", "// A"));
    let cases = [
        (
            json!([{"oldText": "nothere", "newText": "x"}]),
            "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines.",
        ),
        (
            json!([{"oldText": "// ", "newText": "x"}]),
            "Found 10 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique.",
        ),
        (
            json!([{"oldText": "// A", "newText": "x"}, {"oldText": "nothere", "newText": "x"}]),
            "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines.",
        ),
        (
            json!([{"oldText": "// A", "newText": "x"}, {"oldText": "// ", "newText": "x"}]),
            "Found 10 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique.",
        ),
        (
            json!([{"oldText": "// A\n// b", "newText": "x"}, {"oldText": "// b\n// c", "newText": "y"}]),
            "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions.",
        ),
        (
            json!([{"oldText": "// b", "newText": "// b"}]),
            "No changes made to f.txt. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.",
        ),
        (
            json!([{"oldText": "", "newText": "q"}]),
            "oldText must not be empty in f.txt.",
        ),
        (
            json!([]),
            "Edit tool input is invalid. edits must contain at least one replacement.",
        ),
    ];
    for (edits, expected) in cases {
        let e = err(call("edit", d.path(), json!({"path": "f.txt", "edits": edits})).await);
        assert_eq!(e, expected);
    }
    assert_eq!(read_string(&f), EDIT_FILE.replace("// a", "// A"));
    assert_eq!(
        err(call(
            "edit",
            d.path(),
            json!({"path": "zz.txt", "edits": [{"oldText": "a", "newText": "b"}]})
        )
        .await),
        "Could not edit file: zz.txt. Error code: ENOENT."
    );
    assert_eq!(
        err(call(
            "edit",
            d.path(),
            json!({"path": "f.txt", "edits": [{"oldText": 1}]})
        )
        .await),
        // pi 1.6.0's own text for this call (pi-schema: the number converts, newText is missing).
        "Validation failed for tool \"edit\":\n  - edits.0.newText: missing\n\nReceived arguments:\n{\n  \"path\": \"f.txt\",\n  \"edits\": [\n    {\n      \"oldText\": 1\n    }\n  ]\n}"
    );
}

#[tokio::test]
async fn edit_keeps_bom_and_crlf_and_matches_fuzzily() {
    let d = dir();
    let f = d.path().join("crlf.txt");
    write(&f, "\u{FEFF}one\r\ntwo \r\nthree\r\n");
    let out = ok(call(
        "edit",
        d.path(),
        json!({"path": "crlf.txt", "edits": [{"oldText": "two\nthree", "newText": "2\n3"}]}),
    )
    .await);
    assert_eq!(
        out.details,
        json!({"diff": " 1 one\n-2 two\n-3 three\n+2 2\n+3 3",
            "patch": "--- crlf.txt\n+++ crlf.txt\n@@ -1,3 +1,3 @@\n one\n-two\n-three\n+2\n+3\n",
            "firstChangedLine": 2})
    );
    assert_eq!(read_string(&f), "\u{FEFF}one\r\n2\r\n3\r\n");
}

#[tokio::test]
async fn bash_success_and_exit_codes() {
    let d = dir();
    let out = ok(call(
        "bash",
        d.path(),
        json!({"command": "echo hi; echo err >&2"}),
    )
    .await);
    assert_eq!(as_json(&out), text_result("hi\nerr\n"));
    let out = ok(call("bash", d.path(), json!({"command": "pwd"})).await);
    let cwd = std::fs::canonicalize(d.path()).unwrap_or_default();
    assert_eq!(text_of(&out), format!("{}\n", cwd.display()));
    let out = ok(call("bash", d.path(), json!({"command": "true"})).await);
    assert_eq!(as_json(&out), text_result("(no output)"));
    assert_eq!(
        err(call("bash", d.path(), json!({"command": "echo out; exit 3"})).await),
        "out\n\n\nCommand exited with code 3"
    );
    assert_eq!(
        err(call("bash", d.path(), json!({"command": "exit 3"})).await),
        "(no output)\n\nCommand exited with code 3"
    );
    // The tool keeps escape codes and `\r` (only user bash cleans them).
    let out = ok(call(
        "bash",
        d.path(),
        json!({"command": "printf '\\033[31mred\\033[0m\\r\\n'"}),
    )
    .await);
    assert_eq!(text_of(&out), "\u{1b}[31mred\u{1b}[0m\r\n");
    // A background child holding the pipes does not keep the call waiting.
    let started = Instant::now();
    let out = ok(call(
        "bash",
        d.path(),
        json!({"command": "sleep 2 & echo spawned"}),
    )
    .await);
    assert_eq!(text_of(&out), "spawned\n");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

/// Whether `pid` is gone (or a zombie nobody reaped yet, which is as dead).
#[cfg(target_os = "linux")]
/// Whether `pid` is gone (or a zombie) within two seconds: a killed process needs a moment
/// to be reaped, longer on a loaded machine.
async fn dies(pid: &str) -> bool {
    for _ in 0..40 {
        if is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn is_dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn bash_timeout_kills_the_process_group() {
    let d = dir();
    let started = Instant::now();
    let e = err(call(
        "bash",
        d.path(),
        json!({"command": "sleep 5 & echo $! > child.pid; echo start; wait", "timeout": 1}),
    )
    .await);
    let took = started.elapsed();
    assert_eq!(e, "start\n\n\nCommand timed out after 1 seconds");
    // Well before the 5 s sleep ends (a loaded machine may take a while to kill and reap).
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_millis(4500),
        "{took:?}"
    );
    #[cfg(target_os = "linux")]
    {
        let pid = read_string(&d.path().join("child.pid"));
        assert!(dies(pid.trim()).await, "sleep {pid} survived the timeout");
    }
}

#[tokio::test]
async fn bash_abort_kills_the_process_group() {
    let d = dir();
    let (mut ctx, abort) = context(d.path());
    let (progress, mut updates) = tokio::sync::mpsc::unbounded_channel();
    ctx.progress = Some(progress);
    let run = tool("bash").run(
        json!({"command": "sleep 5 & echo $! > child.pid; echo before; wait"}),
        ctx,
    );
    let started = Instant::now();
    // Abort once the command has shown its output, however long the machine takes to get
    // there.
    let aborter = tokio::spawn(async move {
        while let Some(update) = updates.recv().await {
            if format!("{:?}", update.content).contains("before") {
                break;
            }
        }
        abort.cancel();
        abort
    });
    let e = err(run.await);
    assert_eq!(e, "before\n\n\nCommand aborted");
    assert!(started.elapsed() < Duration::from_millis(4500));
    let _ = aborter.await;
    #[cfg(target_os = "linux")]
    {
        let pid = read_string(&d.path().join("child.pid"));
        assert!(dies(pid.trim()).await, "sleep {pid} survived the abort");
    }
    // Already aborted: killed at once. pi spawns and then kills too, so a fast command may
    // get its output out first; either way the call is an abort.
    let (ctx, abort) = context(d.path());
    abort.cancel();
    let e = err(tool("bash").run(json!({"command": "echo x"}), ctx).await);
    assert!(
        e == "Command aborted" || e == "x\n\n\nCommand aborted",
        "{e:?}"
    );
}

#[tokio::test]
async fn bash_truncates_long_output_and_keeps_it_all() {
    let d = dir();
    // The session's folder for full outputs (the runtime's Toolset holds it).
    let outputs = OutputDir::new();
    let call = |name: &'static str, cwd: PathBuf, args: Value| {
        let (mut ctx, _abort) = context(&cwd);
        ctx.output_dir = outputs.clone();
        async move { tool(name).run(args, ctx).await }
    };
    let out = ok(call(
        "bash",
        d.path().to_path_buf(),
        json!({"command": "seq 1 3000"}),
    )
    .await);
    let path = out.details["fullOutputPath"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let name = Path::new(&path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    assert!(
        name.len() == "pi-bash-0123456789abcdef.log".len()
            && name.starts_with("pi-bash-")
            && name.ends_with(".log")
            && name[8..24].chars().all(|c| c.is_ascii_hexdigit()),
        "{path}"
    );
    // In the process's own folder in the temp directory: <tmp>/pith-<pid>-<8 hex>/.
    let folder = PathBuf::from(&path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    assert_eq!(folder.parent(), Some(std::env::temp_dir().as_path()));
    let folder_name = folder
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_owned();
    let prefix = format!("pith-{}-", std::process::id());
    assert!(
        folder_name.starts_with(&prefix)
            && folder_name.len() == prefix.len() + 8
            && folder_name[prefix.len()..]
                .chars()
                .all(|c| c.is_ascii_hexdigit()),
        "{folder_name}"
    );
    let all: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(read_string(Path::new(&path)), all);
    let kept: String = (1002..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        as_json(&out),
        json!({
            "content": [{"type": "text", "text": format!("{kept}\n\n[Showing lines 1002-3001 of 3001. Full output: {path}]")}],
            "details": {
                "truncation": {
                    "content": kept, "truncated": true, "truncatedBy": "lines", "totalLines": 3001,
                    "totalBytes": 13893, "outputLines": 2000, "outputBytes": 9995, "lastLinePartial": false,
                    "firstLineExceedsLimit": false, "maxLines": 2000, "maxBytes": 51200
                },
                "fullOutputPath": path
            }
        })
    );
    let _ = std::fs::remove_file(&path);

    // One line longer than 50 KB: its end is shown.
    let out = ok(call(
        "bash",
        d.path().to_path_buf(),
        json!({"command": "head -c 60000 /dev/zero | tr '\\0' a"}),
    )
    .await);
    let path = out.details["fullOutputPath"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        text_of(&out),
        format!(
            "{}\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]",
            "a".repeat(51200)
        )
    );
    assert_eq!(read_string(Path::new(&path)).len(), 60000);

    // Private: the folder 0700, the files 0600; gone with the last handle.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| {
        std::fs::symlink_metadata(p)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    assert_eq!(mode(Path::new(&path)), 0o600);
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(outputs.path(), Some(folder.clone()));
    drop(outputs);
    assert!(!folder.exists(), "{} is left", folder.display());
}

#[tokio::test]
async fn bash_streams_progress() {
    let d = dir();
    let (mut ctx, _abort) = context(d.path());
    let (tx, mut rx) = mpsc::unbounded_channel();
    ctx.progress = Some(tx);
    let out = ok(tool("bash")
        .run(json!({"command": "echo a; sleep 0.3; echo b"}), ctx)
        .await);
    assert_eq!(text_of(&out), "a\nb\n");
    let mut updates = Vec::new();
    while let Ok(u) = rx.try_recv() {
        updates.push(as_json(&u));
    }
    assert_eq!(
        updates,
        vec![
            json!({"content": [], "details": null}),
            json!({"content": [{"type": "text", "text": "a\n"}], "details": {}}),
            json!({"content": [{"type": "text", "text": "a\nb\n"}], "details": {}}),
        ]
    );
}

#[tokio::test]
async fn user_bash_cleans_output_and_applies_the_prefix() {
    let d = dir();
    let abort = CancellationToken::new();
    let (chunk_tx, mut chunk_rx) = mpsc::unbounded_channel();
    let shell = ShellConfig {
        shell_path: None,
        command_prefix: Some("alias_x=1".to_owned()),
    };
    let outputs = OutputDir::in_dir(d.path());
    let result = execute_bash_with(
        "printf '\\033[1mbold\\033[0m\\r\\nline2\\r\\n\\001'; echo $alias_x; exit 2",
        d.path(),
        &shell,
        &outputs,
        abort.clone(),
        Some(chunk_tx),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        serde_json::to_value(&result).unwrap_or_default(),
        json!({"output": "bold\nline2\n1\n", "exitCode": 2, "cancelled": false, "truncated": false})
    );
    let mut chunks = String::new();
    while let Ok(c) = chunk_rx.try_recv() {
        chunks.push_str(&c);
    }
    assert_eq!(chunks, "bold\nline2\n1\n");

    // The agent's simpler entry point.
    let result = execute_bash("echo $P", d.path(), Some("P=pre"), &outputs, abort.clone()).await;
    assert_eq!(
        (result.output.as_str(), result.exit_code),
        ("pre\n", Some(0))
    );

    let missing = d.path().join("gone");
    let e = execute_bash_with(
        "true",
        &missing,
        &ShellConfig::default(),
        &outputs,
        abort,
        None,
    )
    .await;
    assert_eq!(
        e.map_err(|e| e.to_string()),
        Err(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            missing.display()
        ))
    );
}

#[tokio::test]
async fn user_bash_abort_and_truncation() {
    let d = dir();
    let abort = CancellationToken::new();
    let tx = abort.clone();
    let aborter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.cancel();
        tx
    });
    let started = Instant::now();
    let outputs = OutputDir::in_dir(d.path());
    let result = execute_bash("echo hi; sleep 5", d.path(), None, &outputs, abort).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    let _ = aborter.await;
    assert_eq!(
        serde_json::to_value(&result).unwrap_or_default(),
        json!({"output": "hi\n", "cancelled": true, "truncated": false})
    );

    let abort = CancellationToken::new();
    let result = execute_bash("seq 1 30000", d.path(), None, &outputs, abort).await;
    let path = result.full_output_path.clone().unwrap_or_default();
    let all: String = (1..=30000).map(|i| format!("{i}\n")).collect();
    assert_eq!(read_string(Path::new(&path)), all);
    let kept: String = (28002..=30000).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        (result.output, result.exit_code, result.truncated),
        (kept, Some(0), true)
    );
    let _ = std::fs::remove_file(&path);
}
