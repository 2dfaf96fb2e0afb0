//! pith's own editor in a pseudo-terminal (issue #16): the status line above the editor
//! (working indicator, retry countdown), multi-line prompts, large pastes, Ctrl+G,
//! `keybindings.json` and resizing, driven as a person would on the offline model.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use super::interactive::{setup, text_reply, user_texts};

#[test]
fn the_working_indicator_shows_at_once_counts_seconds_and_goes_with_the_reply() {
    let s = setup(r#"[{"content": [{"type": "text", "text": "slow answer"}], "delayMs": 2500}]"#);
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.send("take your time");
    pith.expect("take your time");
    let sent = Instant::now();
    pith.send("\r");
    pith.expect("Working... 0s (escape to interrupt)");
    let shown = sent.elapsed();
    assert!(
        shown < Duration::from_millis(200),
        "the indicator took {shown:?}"
    );
    // It counts in place while the reply is pending.
    pith.expect("Working... 1s (escape to interrupt)");
    pith.expect("Working... 2s (escape to interrupt)");
    pith.expect("slow answer");
    pith.idle();
    let screen = pith.screen();
    assert!(!screen.contains("Working"), "{screen}");
    // Redrawn in place: the indicator never reached the transcript's lines.
    assert_eq!(screen.matches("take your time").count(), 1, "{screen}");
    assert_eq!(pith.quit(), 0);
}

#[test]
fn an_auto_retry_counts_down_in_place() {
    let s = setup(&format!(
        r#"[{{"content": [], "errorMessage": "503 Service Unavailable: overloaded"}}, {}]"#,
        text_reply("after the retry")
    ));
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(
        s.agent.join("settings.json"),
        r#"{"retry": {"baseDelayMs": 3000}}"#,
    )
    .unwrap();
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("hello");
    pith.expect("Retrying (1/3) in 3s... (escape to cancel)");
    pith.expect("Retrying (1/3) in 2s... (escape to cancel)");
    pith.expect("Retrying (1/3) in 1s... (escape to cancel)");
    pith.expect("after the retry");
    pith.idle();
    let screen = pith.screen();
    assert!(!screen.contains("Retrying"), "{screen}");
    assert_eq!(pith.quit(), 0);
    assert_eq!(user_texts(&s.sessions()[0]), ["hello"]);
}

#[test]
fn ctrl_j_and_shift_enter_add_lines_to_one_prompt() {
    let s = setup(&format!("[{}]", text_reply("three lines read")));
    let mut pith = s.start(&[]);
    pith.prompt();
    // The editor asks for the kitty keyboard protocol (Shift+Enter apart from Enter) and
    // bracketed paste.
    let raw = pith.raw();
    assert!(raw.contains("\x1b[>1u") && raw.contains("\x1b[?2004h"));
    // Ctrl+J, then Shift+Enter as the kitty keyboard protocol sends it.
    pith.send("first\n");
    pith.send("second\x1b[13;2u");
    pith.send("third");
    pith.expect_screen("  third");
    let screen = pith.screen();
    assert!(screen.contains("> first\n  second\n  third"), "{screen}");
    pith.send("\r");
    pith.expect("three lines read");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(user_texts(&s.sessions()[0]), ["first\nsecond\nthird"]);
}

#[test]
fn a_large_bracketed_paste_shows_as_a_marker_and_is_sent_whole() {
    let s = setup(&format!("[{}]", text_reply("pasted text read")));
    let mut pith = s.start(&[]);
    pith.prompt();
    let pasted: Vec<String> = (1..=2000).map(|i| format!("log line {i}")).collect();
    let pasted = pasted.join("\n");
    pith.send("summarize: ");
    pith.send(&format!("\x1b[200~{pasted}\x1b[201~"));
    pith.expect("> summarize: [paste #1 +2000 lines]");
    pith.send(" thanks\r");
    pith.expect("pasted text read");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert!(!pith.transcript().contains("log line 1000"));
    assert_eq!(
        user_texts(&s.sessions()[0]),
        [format!("summarize: {pasted} thanks")]
    );
}

#[test]
fn ctrl_g_edits_the_prompt_in_the_external_editor() {
    let s = setup(&format!("[{}]", text_reply("edited prompt read")));
    let script = s.root.join("edit.sh");
    fs::write(
        &script,
        "#!/bin/sh\ntext=$(cat \"$1\")\nprintf 'rewritten: %s\\n' \"$text\" > \"$1\"\n",
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let mut pith = s.start_with_env(
        &[],
        &[("VISUAL", "".as_ref()), ("EDITOR", script.as_os_str())],
    );
    pith.prompt();
    pith.send("my draft");
    pith.expect("my draft");
    pith.send("\x07");
    pith.expect("> rewritten: my draft");
    pith.send("\r");
    pith.expect("edited prompt read");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(user_texts(&s.sessions()[0]), ["rewritten: my draft"]);
}

#[test]
fn keybindings_json_remaps_keys_and_hotkeys_lists_them() {
    let s = setup(&format!("[{}]", text_reply("two lines read")));
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(
        s.agent.join("keybindings.json"),
        r#"{"app.thinking.toggle": "ctrl+k", "tui.input.newLine": ["alt+n"]}"#,
    )
    .unwrap();
    let mut pith = s.start(&[]);
    pith.prompt();
    // Ctrl+T is no longer bound; Ctrl+K now toggles thinking blocks.
    pith.send("\x14");
    pith.send("\x0b");
    pith.expect("Thinking blocks: hidden");
    pith.prompt();
    assert_eq!(pith.transcript().matches("Thinking blocks").count(), 1);
    pith.line("/hotkeys");
    pith.expect("ctrl+k");
    pith.expect("hide or show thinking blocks");
    pith.prompt();
    // Alt+N adds a line; Ctrl+J does nothing now.
    pith.send("one\x1bn");
    pith.send("two\n\r");
    pith.expect("two lines read");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(user_texts(&s.sessions()[0]), ["one\ntwo"]);
}

#[test]
fn a_keybindings_file_that_does_not_parse_is_named_and_the_defaults_stay() {
    let s = setup("[]");
    fs::create_dir_all(&s.agent).unwrap();
    let file = s.agent.join("keybindings.json");
    fs::write(&file, "{\"app.clear\": ").unwrap();
    let mut pith = s.start(&[]);
    pith.expect(&format!("Warning: {}: invalid JSON", file.display()));
    pith.expect("using the default keys");
    pith.prompt();
    pith.send("\x14");
    pith.expect("Thinking blocks: hidden");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn the_editor_is_wrapped_again_for_a_new_width() {
    let s = setup("[]");
    let mut pith = s.start(&[]);
    pith.prompt();
    let words: Vec<String> = (1..=30).map(|i| format!("w{i:02}")).collect();
    let text = words.join(" ");
    pith.send(&text);
    pith.expect("w30");
    // 119 characters after "> " in 99 columns: two rows.
    pith.expect_screen("  ");
    let row_of = |screen: &str, needle: &str| {
        screen
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} not on the screen:\n{screen}"))
    };
    let screen = pith.screen();
    assert_eq!(
        row_of(&screen, "w30") - row_of(&screen, "> w01"),
        1,
        "{screen}"
    );
    pith.resize(40);
    // 39 columns: 37 characters a row, four rows, none wider than the terminal.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let screen = pith.screen();
        if screen
            .lines()
            .position(|l| l.contains("w30"))
            .zip(screen.lines().position(|l| l.starts_with("> w01")))
            .is_some_and(|(end, start)| end - start == 3)
        {
            break;
        }
        assert!(Instant::now() < deadline, "not wrapped again:\n{screen}");
        std::thread::sleep(Duration::from_millis(20));
    }
    pith.send("\x15");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn typing_a_slash_shows_the_command_menu_with_descriptions() {
    let s = setup("[]");
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.send("/n");
    pith.expect_screen("Start a new session");
    let screen = pith.screen();
    assert!(
        screen.contains("→ /name         Set session display name"),
        "{screen}"
    );
    assert!(
        screen.contains("  /new          Start a new session"),
        "{screen}"
    );
    // Down selects the next one, Tab accepts it.
    pith.send("\x1b[B");
    pith.expect_screen("→ /new");
    pith.send("\t");
    pith.expect("> /new ");
    pith.send("\x15");
    // Enter runs the selected command.
    pith.send("/cop");
    pith.expect_screen("→ /copy");
    pith.send("\r");
    pith.expect("No agent messages to copy yet.");
    pith.prompt();
    let screen = pith.screen();
    assert!(!screen.contains("→ /copy"), "{screen}");
    assert_eq!(pith.quit(), 0);
}

#[test]
fn ctrl_z_gives_the_terminal_back_and_the_editor_is_drawn_again() {
    // pith runs as its pseudo-terminal's session leader, an orphaned process group in
    // which the kernel discards the stop: what is checked is that pith gives the terminal
    // back (keyboard protocol and paste mode off) and draws the editor again with its text.
    let s = setup(&format!("[{}]", text_reply("still here")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.send("kept draft");
    pith.expect("kept draft");
    // Waits until the terminal received `needle` after byte `from`; returns where it ends.
    let wait_raw = |pith: &super::interactive::Pith, from: usize, needle: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(at) = pith.raw()[from..].find(needle) {
                return from + at + needle.len();
            }
            assert!(Instant::now() < deadline, "{needle:?} did not come");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let before = pith.raw().len();
    pith.send("\x1a");
    let left = wait_raw(&pith, before, "\x1b[<u\x1b[?2004l");
    wait_raw(&pith, left, "> kept draft");
    // Stopped from outside and continued (a shell's `fg`): the editor is drawn again.
    let kill = |sig: &str| {
        let status = std::process::Command::new("kill")
            .args([sig, &pith.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    std::thread::sleep(Duration::from_millis(200));
    let before = pith.raw().len();
    kill("-STOP");
    std::thread::sleep(Duration::from_millis(100));
    kill("-CONT");
    wait_raw(&pith, before, "> kept draft");
    pith.send("\r");
    pith.expect("still here");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(user_texts(&s.sessions()[0]), ["kept draft"]);
}

#[test]
fn a_503_from_a_real_provider_counts_down_and_the_retry_is_answered() {
    let s = setup("[]");
    let server = pith_tests::pi_oracle::MockLlm::start(
        &s.root,
        "retry",
        &serde_json::json!([
            {"status": 503, "error": {"message": "overloaded", "type": "server_error"}},
            {"text": "served after the 503"}
        ]),
    );
    local_model(&s, &server);
    fs::write(
        s.agent.join("settings.json"),
        r#"{"retry": {"baseDelayMs": 2000}}"#,
    )
    .unwrap();
    let mut pith = s.start(&["--model", "local/small"]);
    pith.prompt();
    pith.line("hello");
    pith.expect("Retrying (1/3) in 2s... (escape to cancel)");
    pith.expect("Retrying (1/3) in 1s... (escape to cancel)");
    pith.expect("served after the 503");
    pith.expect("small");
    pith.prompt();
    let screen = pith.screen();
    assert!(!screen.contains("Retrying"), "{screen}");
    assert_eq!(pith.quit(), 0);
    assert_eq!(server.request_bodies().len(), 2);
}

#[test]
fn a_long_line_shows_while_it_streams_before_its_newline() {
    let s = setup("[]");
    let words = "lorem ipsum dolor sit amet ".repeat(12);
    let server = pith_tests::pi_oracle::MockLlm::start_with(
        &s.root,
        "stream",
        &serde_json::json!([{"text": format!("{words}THE END")}]),
        &["--chunk-size", "6", "--chunk-delay-ms", "60"],
    );
    local_model(&s, &server);
    let mut pith = s.start(&["--model", "local/small"]);
    pith.prompt();
    pith.line("stream please");
    // The first words are on screen while the one line of the reply is still streaming.
    pith.expect("lorem ipsum dolor");
    let screen = pith.screen();
    assert!(!screen.contains("THE END"), "{screen}");
    pith.expect("THE END");
    pith.expect("small");
    pith.prompt();
    let screen = pith.screen();
    // Once the line ends it is in the transcript once, not left behind in the live rows.
    assert_eq!(screen.matches("THE END").count(), 1, "{screen}");
    assert_eq!(pith.quit(), 0);
}

#[test]
fn ctrl_minus_undoes_an_edit_and_then_a_typed_word_at_a_time() {
    let s = setup(&format!("[{}]", text_reply("undone")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.send("hello world foo");
    pith.expect_screen("> hello world foo");
    // Ctrl+W deletes "foo"; Ctrl+- (0x1f) brings it back.
    pith.send("\x17");
    pith.expect_screen_gone("world foo");
    pith.send("\x1f");
    pith.expect_screen("> hello world foo");
    // Then a typed word at a time, with the space before it (pi's undo steps).
    pith.send("\x1f");
    pith.expect_screen_gone("foo");
    let screen = pith.screen();
    assert!(
        screen.lines().any(|l| l.trim_end() == "> hello world"),
        "{screen}"
    );
    pith.send("\x1f");
    pith.expect_screen_gone("world");
    pith.send(" there\r");
    pith.expect("undone");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(user_texts(&s.sessions()[0]), ["hello there"]);
}

#[test]
fn ctrl_bracket_jumps_to_the_character_typed_next() {
    let s = setup(&format!("[{}]", text_reply("jumped")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.send("hello world");
    pith.expect_screen("> hello world");
    // Ctrl+A, Ctrl+] (0x1d) then "w": the cursor goes onto the "w".
    pith.send("\x01\x1dwX");
    pith.expect_screen("> hello Xworld");
    // Ctrl+Alt+] then "h": back onto the "h".
    pith.send("\x05\x1b\x1dhY");
    pith.expect_screen("> Yhello Xworld");
    // A character with no occurrence leaves the cursor where it is.
    pith.send("\x1dqZ");
    pith.expect_screen("> YZhello Xworld");
    pith.send("\r");
    pith.expect("jumped");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(user_texts(&s.sessions()[0]), ["YZhello Xworld"]);
}

#[test]
fn a_table_is_drawn_while_it_streams() {
    let s = setup("[]");
    let reply = "Table below.\n\n| Name | Value |\n|---|---|\n| foo | 1 |\n| bar | 22 |\n| baz | 333 |\n\nAfter the table.";
    let server = pith_tests::pi_oracle::MockLlm::start_with(
        &s.root,
        "table",
        &serde_json::json!([{"text": reply}]),
        &["--chunk-size", "4", "--chunk-delay-ms", "150"],
    );
    local_model(&s, &server);
    let mut pith = s.start(&["--model", "local/small"]);
    pith.prompt();
    pith.line("a table please");
    // pi redraws the growing table: its header and finished rows show before it ends.
    pith.expect_screen("│ foo  │ 1     │");
    let screen = pith.screen();
    assert!(screen.contains("│ Name │ Value │"), "{screen}");
    assert!(!screen.contains("333"), "{screen}");
    pith.expect("After the table.");
    pith.expect("small");
    pith.prompt();
    // Once it ends, the table is in the transcript once.
    let screen = pith.screen();
    assert_eq!(screen.matches("│ Name │ Value │").count(), 1, "{screen}");
    assert!(screen.contains("│ baz  │ 333   │"), "{screen}");
    assert_eq!(pith.quit(), 0);
}

#[test]
fn reload_reads_keybindings_json_again() {
    let s = setup("[]");
    let mut pith = s.start(&[]);
    pith.prompt();
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(
        s.agent.join("keybindings.json"),
        r#"{"app.thinking.toggle": "ctrl+k"}"#,
    )
    .unwrap();
    // Before /reload Ctrl+K is still pi's default (delete to the end of the line).
    pith.line("/reload");
    pith.expect("Reloaded keybindings (no extension to reload)");
    pith.prompt();
    pith.send("\x0b");
    pith.expect("Thinking blocks: hidden");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn queued_messages_wait_below_the_transcript_and_alt_up_takes_them_back() {
    // pi's pending messages: a steer and a follow-up typed while a reply streams are listed
    // under the transcript, not printed into it; Alt+Up puts them back into the editor.
    let s = setup(r#"[{"content": [{"type": "text", "text": "never"}], "delayMs": 10000}]"#);
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("start");
    pith.expect("Working...");
    pith.line("steer one");
    pith.expect(" Steering: steer one");
    pith.send("follow two\x1b\r");
    pith.expect(" Follow-up: follow two");
    pith.expect("↳ alt+up to edit all queued messages");
    let screen = pith.screen();
    assert!(!screen.contains("> steer one"), "{screen}");
    assert_eq!(screen.matches("steer one").count(), 1, "{screen}");
    // Alt+Up.
    pith.send("\x1b[1;3A");
    pith.expect("Restored 2 queued messages to editor");
    let screen = pith.screen();
    assert!(!screen.contains("Steering:"), "{screen}");
    assert!(screen.contains("steer one"), "{screen}");
    assert!(screen.contains("follow two"), "{screen}");
    pith.send("\x1b");
    pith.expect("Operation aborted");
    pith.idle();
    // Ctrl+C empties the editor so that Ctrl+D quits.
    pith.send("\x03");
    assert_eq!(pith.quit(), 0);
}

#[test]
fn ctrl_s_in_the_model_selector_saves_the_default_model() {
    let s = setup("[]");
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(s.agent.join("settings.json"), r#"{"theme": "dark"}"#).unwrap();
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/model");
    pith.expect_screen("ctrl+s set as default");
    pith.send("\x13");
    pith.expect("Default model: faux/faux-1");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    let settings: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(s.agent.join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings["defaultProvider"], "faux");
    assert_eq!(settings["defaultModel"], "faux-1");
    assert_eq!(settings["theme"], "dark");
}

/// Registers `server` as the model `local/small` in the setup's agent folder.
pub(crate) fn local_model(s: &super::interactive::Setup, server: &pith_tests::pi_oracle::MockLlm) {
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(
        s.agent.join("models.json"),
        serde_json::json!({"providers": {"local": {
            "baseUrl": server.url, "api": "openai-completions", "apiKey": "none",
            "models": [{"id": "small", "contextWindow": 32768}]
        }}})
        .to_string(),
    )
    .unwrap();
}

/// A pith running inside its own tmux server (the terminal of the side-by-side trials),
/// driven with `tmux send-keys`; the server is killed when this is dropped.
struct InTmux {
    socket: String,
}

impl InTmux {
    fn start(s: &super::interactive::Setup) -> InTmux {
        let socket = format!("pith-test-{}", std::process::id());
        let command = format!(
            "env -u NO_COLOR PITH_AGENT_DIR='{}' HOME='{}' TERM=tmux-256color TZ=UTC '{}' --faux-script '{}'",
            s.agent.display(),
            s.root.display(),
            env!("CARGO_BIN_EXE_pith"),
            s.script.display()
        );
        let tmux = InTmux { socket };
        let work = s.work.display().to_string();
        tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "30",
            "-c",
            &work,
            &command,
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs (scripts/test installs it)");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits up to 10 s for `text` on the pane.
    fn expect(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let pane = self.run(&["capture-pane", "-p"]);
            if pane.contains(text) {
                return pane;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{text:?} not on the pane:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for InTmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[test]
fn shift_enter_adds_a_line_inside_tmux() {
    // tmux 3.3 passes Shift+Enter on only to a program that asked for xterm's
    // modifyOtherKeys (it knows no kitty protocol); otherwise `send-keys S-Enter` types the
    // text "S-Enter".
    let s = setup(&format!("[{}]", text_reply("two lines read")));
    let tmux = InTmux::start(&s);
    tmux.expect("faux-1");
    tmux.run(&["send-keys", "-l", "first"]);
    tmux.run(&["send-keys", "S-Enter"]);
    tmux.run(&["send-keys", "-l", "second"]);
    let pane = tmux.expect("  second");
    assert!(pane.contains("> first\n  second"), "{pane}");
    tmux.run(&["send-keys", "Enter"]);
    tmux.expect("two lines read");
    assert_eq!(user_texts(&s.sessions()[0]), ["first\nsecond"]);
}
