//! The transcript laid out again, as pi's regular mode renders every component again: for a
//! new terminal width (a resize), with thinking hidden (Ctrl+T) and with tool output
//! expanded (Ctrl+O), including what was printed before the change; and full-screen mode
//! (`--tui-mode fullscreen`), which draws the same transcript in the alternate screen.

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
    let text = wait_layout(&pith, before, "output not collapsed", |t| {
        !t.contains("row-01") && t.contains("row-40")
    });
    // Each toggle's status replaced the one before it (pi's showStatus): one line left.
    assert_eq!(text.matches("Tool output: collapsed").count(), 1, "{text}");
    assert!(!text.contains("Tool output: expanded"), "{text}");
    assert!(!text.contains("Thinking blocks: hidden"), "{text}");
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
    let before = layouts(&pith);
    pith.resize(50);
    wait_layout(&pith, before, "no layout while streaming", |t| {
        t.contains("line 01")
    });
    // What was printed before that layout's clear, not what this poll saw after it (the
    // stream goes on meanwhile, and a slow poll would see its end).
    let raw = pith.raw();
    let at = raw
        .match_indices("\x1b[3J")
        .nth(before)
        .map(|(at, _)| at)
        .expect("the layout just seen");
    let printed_before = strip_ansi(&raw[..at]);
    assert!(
        !printed_before.contains("line 12"),
        "laid out after the end:\n{printed_before}"
    );
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

#[test]
fn fullscreen_mode_keeps_the_editor_at_the_bottom_and_pages_through_the_transcript() {
    let replies: Vec<String> = (1..=8)
        .map(|i| text_reply(&format!("reply {i}\n\nsecond paragraph of reply {i}")))
        .collect();
    let s = setup(&format!("[{}]", replies.join(",")));
    let mut pith = s.start(&["--tui-mode", "fullscreen"]);
    pith.prompt();
    assert!(
        pith.raw().contains("\x1b[?1049h"),
        "not on the alternate screen"
    );
    let rows = |screen: &str| screen.lines().map(str::to_owned).collect::<Vec<_>>();
    // Short transcript: from the top; the editor on the last row.
    let screen = pith.screen();
    assert!(rows(&screen)[0].starts_with("pith v"), "{screen}");
    for i in 1..=8 {
        pith.line(&format!("question {i}"));
        pith.expect(&format!("second paragraph of reply {i}"));
        pith.idle();
    }
    let full = pith.full_screen();
    assert_eq!(full.len(), 40);
    assert_eq!(full[39].trim_end(), ">", "{full:#?}");
    assert!(
        full.iter()
            .any(|r| r.contains("second paragraph of reply 8")),
        "{full:#?}"
    );
    assert!(!full.iter().any(|r| r.starts_with("pith v")), "{full:#?}");

    // PageUp twice reaches the start; the last row of the view says there is more below.
    pith.send("\x1b[5~");
    pith.send("\x1b[5~");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pith.screen().starts_with("pith v") {
        assert!(Instant::now() < deadline, "{}", pith.screen());
        std::thread::sleep(Duration::from_millis(20));
    }
    let full = pith.full_screen();
    assert!(full[38].contains("more below"), "{full:#?}");
    assert_eq!(full[39].trim_end(), ">", "{full:#?}");
    // Ctrl+End: back to the latest.
    pith.send("\x1b[1;5F");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pith.screen().contains("more below") {
        assert!(Instant::now() < deadline, "{}", pith.screen());
        std::thread::sleep(Duration::from_millis(20));
    }

    // On the way out the transcript is printed on the normal screen, then the resume hint.
    pith.send("/quit\r");
    assert_eq!(pith.exit_code(), 0);
    assert!(pith.raw().contains("\x1b[?1049l"));
    let after = pith.raw();
    let main = strip_ansi(&after[after.rfind("\x1b[?1049l").unwrap_or(0)..]);
    assert!(main.contains("question 1"), "{main}");
    assert!(main.contains("second paragraph of reply 8"), "{main}");
    assert!(main.contains("To resume this session"), "{main}");
}

#[test]
fn the_tui_mode_setting_turns_fullscreen_on() {
    let s = setup(&format!("[{}]", text_reply("hello")));
    std::fs::create_dir_all(&s.agent).unwrap();
    std::fs::write(
        s.agent.join("settings.json"),
        r#"{"tuiMode": "fullscreen"}"#,
    )
    .unwrap();
    let mut pith = s.start(&[]);
    pith.prompt();
    assert!(pith.raw().contains("\x1b[?1049h"));
    // The flag wins over the setting.
    assert_eq!(pith.quit(), 0);
    let mut pith = s.start(&["--tui-mode", "regular"]);
    pith.prompt();
    assert!(!pith.raw().contains("\x1b[?1049h"));
    assert_eq!(pith.quit(), 0);
}

#[test]
fn fullscreen_gives_the_normal_screen_to_a_suspend_and_takes_it_back() {
    let s = setup(&format!("[{}]", text_reply("hello")));
    let mut pith = s.start(&["--tui-mode", "fullscreen"]);
    pith.prompt();
    let entered = pith.raw().matches("\x1b[?1049h").count();
    pith.send("\x1a");
    // Ctrl-Z: pith leaves the alternate screen before it stops.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pith.raw().contains("\x1b[?1049l") {
        assert!(Instant::now() < deadline, "still on the alternate screen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_raw(pith.pid()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pith.raw().matches("\x1b[?1049h").count() == entered {
        assert!(
            Instant::now() < deadline,
            "the alternate screen was not taken back"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    pith.line("after");
    pith.expect("hello");
    pith.idle();
    assert_eq!(pith.quit(), 0);
}
