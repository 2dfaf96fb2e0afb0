//! The transcript laid out again, as pi's regular mode renders every component again: for a
//! new terminal width (a resize), with thinking hidden (Ctrl+T) and with tool output
//! expanded (Ctrl+O), including what was printed before the change.

use std::time::{Duration, Instant};

use super::interactive::{Pith, setup, strip_ansi, text_reply};

/// How many times the screen and scrollback were cleared (`ESC [3J`) to lay the transcript
/// out again.
fn layouts(pith: &Pith) -> usize {
    pith.raw().matches("\x1b[3J").count()
}

/// The transcript as last laid out: what was printed since the last clear of the screen and
/// the scrollback, as plain text (the area drawn after it included); `None` before the first.
fn laid_out(pith: &Pith) -> Option<String> {
    let raw = pith.raw();
    let at = raw.rfind("\x1b[3J")?;
    Some(strip_ansi(&raw[at..]))
}

/// Waits for a layout after the first `before` ones that satisfies `ok`.
fn wait_layout(pith: &Pith, before: usize, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = laid_out(pith).unwrap_or_default();
        if layouts(pith) > before && ok(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what}:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_new_width_wraps_every_reply_again_at_word_boundaries() {
    let words: Vec<String> = (1..=30).map(|i| format!("w{i:02}")).collect();
    let reply = words.join(" ");
    let s = setup(&format!(
        "[{}, {}]",
        text_reply(&reply),
        text_reply("short")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("first");
    pith.expect("w30");
    pith.idle();
    pith.line("second");
    pith.expect("short");
    pith.idle();
    // 119 characters in 100 columns: two rows, the second starting with a whole word.
    let screen = pith.screen();
    assert!(screen.lines().any(|l| l.starts_with("w01 ")), "{screen}");

    assert_eq!(layouts(&pith), 0, "nothing was laid out again yet");

    pith.resize(40);
    // Laid out again for 40 columns: rows of whole words, none wider than the terminal,
    // the first reply as well as the last.
    let text = wait_layout(&pith, 0, "the first reply was not wrapped again", |t| {
        t.lines()
            .any(|l| l == "w01 w02 w03 w04 w05 w06 w07 w08 w09 w10")
    });
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('w')).collect();
    assert_eq!(
        rows,
        [
            "w01 w02 w03 w04 w05 w06 w07 w08 w09 w10",
            "w11 w12 w13 w14 w15 w16 w17 w18 w19 w20",
            "w21 w22 w23 w24 w25 w26 w27 w28 w29 w30"
        ],
        "{text}"
    );
    assert!(text.contains("> first\n"), "{text}");
    assert!(text.contains("\nshort\n"), "{text}");
    // The footers (at the start and after each reply) are laid out again too.
    assert_eq!(text.matches("faux-1").count(), 3, "{text}");
    assert!(
        text.lines().all(|l| l.chars().count() <= 40),
        "a row is wider than the terminal:\n{text}"
    );

    let before = layouts(&pith);
    pith.resize(100);
    wait_layout(&pith, before, "not laid out again at 100 columns", |t| {
        t.lines()
            .any(|l| l.starts_with("w01 ") && l.contains("w24"))
    });
    // The editor still works after both.
    pith.send("/quit\r");
    assert_eq!(pith.exit_code(), 0);
}

#[test]
fn ctrl_t_hides_thinking_already_printed_and_ctrl_o_expands_output_already_printed() {
    let tool = serde_json::json!({"content": [
        {"type": "thinking", "thinking": "SECRET THOUGHT"},
        {"type": "toolCall", "id": "t1", "name": "bash",
         "arguments": {"command": "seq -f 'row-%02g' 1 40"}}]});
    let s = setup(&format!("[{tool}, {}]", text_reply("listed")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("list the rows");
    pith.expect("listed");
    pith.idle();
    let screen = pith.screen();
    assert!(screen.contains("SECRET THOUGHT"), "{screen}");
    assert!(screen.contains("row-40"), "{screen}");
    assert!(
        !pith.transcript().contains("row-01"),
        "collapsed output shows its end"
    );

    // Ctrl-T: the thinking already printed becomes pi's label.
    pith.send("\x14");
    pith.expect("Thinking blocks: hidden");
    let text = wait_layout(&pith, 0, "thinking still shown", |t| {
        !t.contains("SECRET THOUGHT") && t.contains("Thinking...")
    });
    assert!(text.contains("listed"), "{text}");
    assert!(!text.contains("row-01"), "{text}");

    // Ctrl-O: the output already printed is shown whole, thinking still hidden.
    let before = layouts(&pith);
    pith.send("\x0f");
    pith.expect("Tool output: expanded");
    let text = wait_layout(&pith, before, "output not expanded", |t| {
        t.contains("row-01") && t.contains("row-40")
    });
    assert!(!text.contains("SECRET THOUGHT"), "{text}");
    // And collapsed again.
    let before = layouts(&pith);
    pith.send("\x0f");
    pith.expect("Tool output: collapsed");
    wait_layout(&pith, before, "output not collapsed", |t| {
        !t.contains("row-01") && t.contains("row-40")
    });
    // The session file is untouched by either: one thinking block, in full.
    let file = std::fs::read_to_string(&s.sessions()[0]).unwrap();
    assert_eq!(file.matches("SECRET THOUGHT").count(), 1);
    assert_eq!(pith.quit(), 0);
}

#[test]
fn a_resize_while_a_reply_streams_loses_and_repeats_nothing() {
    let s = setup("[]");
    let lines: Vec<String> = (1..=12)
        .map(|i| format!("line {i:02} of the streamed reply, long enough to wrap when narrow"))
        .collect();
    let server = pith_tests::pi_oracle::MockLlm::start_with(
        &s.root,
        "stream",
        &serde_json::json!([{"text": lines.join("\n")}]),
        &["--chunk-size", "8", "--chunk-delay-ms", "40"],
    );
    super::interactive_editor::local_model(&s, &server);
    let mut pith = s.start(&["--model", "local/small"]);
    pith.prompt();
    pith.line("stream please");
    pith.expect("line 03");
    // Narrower while the reply is half way.
    pith.resize(50);
    let text = wait_layout(&pith, 0, "no layout while streaming", |t| {
        t.contains("line 01")
    });
    assert!(!text.contains("line 12"), "laid out after the end:\n{text}");
    pith.expect("line 12");
    pith.expect("small");
    pith.prompt();
    // Wider again once it ended: the reply whole, once, each line on rows of its own.
    let before = layouts(&pith);
    pith.resize(100);
    let text = wait_layout(&pith, before, "no layout after the reply", |t| {
        t.contains("line 12")
    });
    for line in &lines {
        assert_eq!(text.matches(line.as_str()).count(), 1, "{line}:\n{text}");
    }
    assert_eq!(text.matches("stream please").count(), 1, "{text}");
    assert_eq!(pith.quit(), 0);
}
