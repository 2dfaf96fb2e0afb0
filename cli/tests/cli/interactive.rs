//! `pith` with no `-p`: the interactive mode driven in a pseudo-terminal as a person would,
//! on the offline model with scripted replies; the session files are checked afterwards.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rexpect::process::PtyProcess;
use serde_json::Value;

const ROWS: u16 = 40;
const COLS: u16 = 100;
/// Generous for a loaded machine; a passing step takes milliseconds.
const TIMEOUT: Duration = Duration::from_secs(15);

/// What the terminal received: the raw bytes and the screen they draw.
struct Terminal {
    raw: Vec<u8>,
    screen: vt100::Parser,
}

/// A pith running in a pseudo-terminal.
pub(crate) struct Pith {
    process: PtyProcess,
    input: fs::File,
    term: Arc<Mutex<Terminal>>,
    /// How far [`Pith::expect`] has read the transcript.
    seen: usize,
    root: PathBuf,
}

/// `agent/` and `work/` under a temp dir, and a faux script.
pub(crate) struct Setup {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) agent: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) script: PathBuf,
}

pub(crate) fn setup(script: &str) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (agent, work) = (root.join("agent"), root.join("work"));
    fs::create_dir_all(&work).unwrap();
    let path = root.join("script.json");
    fs::write(&path, script).unwrap();
    Setup {
        _tmp: tmp,
        root,
        agent,
        work,
        script: path,
    }
}

impl Setup {
    /// Settings that keep only `tokens` recent tokens: pi 1.6.0 compacts nothing when the
    /// whole conversation fits the kept budget (spec compaction.md §4 step 7).
    fn keep_recent(&self, tokens: u64) {
        fs::create_dir_all(&self.agent).unwrap();
        fs::write(
            self.agent.join("settings.json"),
            format!(r#"{{"compaction":{{"keepRecentTokens":{tokens}}}}}"#),
        )
        .unwrap();
    }

    pub(crate) fn start(&self, args: &[&str]) -> Pith {
        self.start_with_env(args, &[])
    }

    /// [`Setup::start`] with extra environment variables.
    pub(crate) fn start_with_env(&self, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Pith {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pith"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        for var in pith_llm::auth::KEY_VARS {
            cmd.env_remove(var);
        }
        cmd.env("PITH_AGENT_DIR", &self.agent)
            .env("HOME", &self.root)
            .env("TERM", "xterm-256color")
            .env("TZ", "UTC")
            .env_remove("NO_COLOR")
            .current_dir(&self.work);
        // The faux script goes with the offline model only (another `--model` talks to a
        // mock server).
        if !args
            .windows(2)
            .any(|w| w[0] == "--model" && !w[1].starts_with("faux/"))
        {
            cmd.arg("--faux-script").arg(&self.script);
        }
        cmd.args(args);
        let mut process = PtyProcess::new(cmd).unwrap();
        process.set_kill_timeout(Some(2000));
        let output = process.get_file_handle().unwrap();
        rustix::termios::tcsetwinsize(
            &output,
            rustix::termios::Winsize {
                ws_row: ROWS,
                ws_col: COLS,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .unwrap();
        let term = Arc::new(Mutex::new(Terminal {
            raw: Vec::new(),
            screen: vt100::Parser::new(ROWS.try_into().unwrap(), COLS.try_into().unwrap(), 0),
        }));
        let (reader_term, mut answer) = (term.clone(), process.get_file_handle().unwrap());
        std::thread::spawn(move || read_terminal(output, &mut answer, &reader_term));
        let input = process.get_file_handle().unwrap();
        Pith {
            process,
            input,
            term,
            seen: 0,
            root: self.root.clone(),
        }
    }

    pub(crate) fn sessions(&self) -> Vec<PathBuf> {
        pith_tests::files::session_files(&self.agent)
    }
}

/// Feeds the terminal and answers cursor position queries as a terminal does.
fn read_terminal(mut output: fs::File, answer: &mut fs::File, term: &Mutex<Terminal>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = output.read(&mut buf) {
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        let mut t = term.lock().unwrap();
        t.screen.process(chunk);
        t.raw.extend_from_slice(chunk);
        if chunk.windows(4).any(|w| w == b"\x1b[6n") {
            let (row, col) = t.screen.screen().cursor_position();
            let _ = write!(answer, "\x1b[{};{}R", row + 1, col + 1);
        }
    }
}

impl Pith {
    /// Everything printed so far as plain text: escape sequences and carriage returns removed.
    pub(crate) fn transcript(&self) -> String {
        strip_ansi(&String::from_utf8_lossy(&self.term.lock().unwrap().raw))
    }

    /// The visible screen, trailing blanks trimmed.
    pub(crate) fn screen(&self) -> String {
        let t = self.term.lock().unwrap();
        let contents = t.screen.screen().contents();
        let lines: Vec<&str> = contents.lines().map(str::trim_end).collect();
        lines.join("\n").trim_end().to_owned()
    }

    /// Waits until `needle` appears after what earlier calls consumed, and consumes up to it.
    pub(crate) fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let text = self.transcript();
            if let Some(at) = text[self.seen..].find(needle) {
                let upto = self.seen + at + needle.len();
                let before = text[self.seen..upto].to_owned();
                self.seen = upto;
                return before;
            }
            if Instant::now() > deadline {
                panic!(
                    "{needle:?} did not appear; after the last match:\n{}\n--- screen ---\n{}",
                    &text[self.seen..],
                    self.screen()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until the visible screen no longer shows `needle`.
    pub(crate) fn expect_screen_gone(&mut self, needle: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while self.screen().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "{needle:?} is still on the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until the visible screen shows `needle` (full-screen views draw in pieces).
    pub(crate) fn expect_screen(&mut self, needle: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.screen().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "{needle:?} is not on the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        self.seen = self.transcript().len();
    }

    /// pith's process id: it leads its terminal's session.
    pub(crate) fn pid(&self) -> i32 {
        rustix::termios::tcgetsid(&self.input)
            .unwrap()
            .as_raw_nonzero()
            .get()
    }

    /// Every row of the visible screen, blanks kept (full-screen mode's layout).
    pub(crate) fn full_screen(&self) -> Vec<String> {
        let t = self.term.lock().unwrap();
        t.screen.screen().rows(0, COLS).collect()
    }

    /// Everything the terminal received, escape sequences included.
    pub(crate) fn raw(&self) -> String {
        String::from_utf8_lossy(&self.term.lock().unwrap().raw).into_owned()
    }

    /// Resizes the terminal to `cols` columns (the kernel tells pith with SIGWINCH).
    pub(crate) fn resize(&mut self, cols: u16) {
        let mut t = self.term.lock().unwrap();
        t.screen
            .set_size(ROWS.try_into().unwrap(), cols.try_into().unwrap());
        rustix::termios::tcsetwinsize(
            &self.input,
            rustix::termios::Winsize {
                ws_row: ROWS,
                ws_col: cols,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .unwrap();
    }

    /// Waits for the editor to show its prompt again (it reads the next line then).
    pub(crate) fn prompt(&mut self) {
        self.expect("> ");
    }

    /// Waits for the end of a run: the footer (with the model), and the prompt after it.
    pub(crate) fn idle(&mut self) {
        self.expect("faux-1");
        self.prompt();
    }

    pub(crate) fn send(&mut self, keys: &str) {
        self.input.write_all(keys.as_bytes()).unwrap();
        self.input.flush().unwrap();
    }

    /// Types `line` and Enter, once the editor is ready.
    pub(crate) fn line(&mut self, line: &str) {
        self.send(&format!("{line}\r"));
        self.expect(line);
    }

    /// Waits for the exit status.
    pub(crate) fn exit_code(&mut self) -> i32 {
        // rexpect does not re-export nix's `WaitStatus`: read its `Exited(Pid(…), code)`.
        let exited = regex::Regex::new(r"^Some\(Exited\(Pid\(\d+\), (-?\d+)\)\)$").unwrap();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let status = format!("{:?}", self.process.status());
            if let Some(c) = exited.captures(&status) {
                return c[1].parse().unwrap();
            }
            assert!(
                status == "Some(StillAlive)",
                "pith ended with {status}; screen:\n{}",
                self.screen()
            );
            if Instant::now() > deadline {
                panic!("pith did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `/quit`, and the exit status.
    pub(crate) fn quit(&mut self) -> i32 {
        self.line("/quit");
        self.exit_code()
    }

    /// The screen with what changes from run to run replaced.
    fn screen_snapshot(&self) -> String {
        let root = self.root.display().to_string();
        let text = self.screen().replace(&root, "[ROOT]");
        let uuid =
            regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
                .unwrap();
        let stamp = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z").unwrap();
        let text = uuid.replace_all(&text, "[UUID]");
        stamp.replace_all(&text, "[TIME]").into_owned()
    }
}

pub(crate) fn strip_ansi(text: &str) -> String {
    let re =
        regex::Regex::new(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
            .unwrap();
    re.replace_all(text, "").replace('\r', "")
}

use pith_tests::files::{entry_kinds as kinds, json_lines as lines};

/// The text of every user message in the file, in order.
pub(crate) fn user_texts(path: &Path) -> Vec<String> {
    lines(path)
        .iter()
        .filter(|v| v["message"]["role"] == "user")
        .map(|v| {
            v["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

pub(crate) fn text_reply(text: &str) -> String {
    serde_json::json!({"content": [{"type": "text", "text": text}]}).to_string()
}

#[test]
fn a_prompt_streams_its_reply_and_quit_exits_0() {
    let s = setup(
        r#"[{"content": [{"type": "thinking", "thinking": "The user greets me."},
                        {"type": "text", "text": "Hello! I am the offline model.\nHow can I help?"}]}]"#,
    );
    let mut pith = s.start(&[]);
    pith.expect("pith v");
    pith.prompt();
    pith.line("Hello there");
    pith.expect("The user greets me.");
    pith.expect("Hello! I am the offline model.");
    pith.expect("How can I help?");
    pith.idle();
    insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("interactive_first_reply", pith.screen_snapshot());
    });
    assert_eq!(pith.quit(), 0);

    let files = s.sessions();
    assert_eq!(files.len(), 1);
    assert_eq!(
        kinds(&files[0]),
        ["model_change", "thinking_level_change", "user", "assistant"]
    );
    let entries = lines(&files[0]);
    assert_eq!(
        entries[4]["message"]["content"][1]["text"],
        "Hello! I am the offline model.\nHow can I help?"
    );
    let history = fs::read_to_string(s.agent.join("history")).unwrap();
    assert!(history.lines().any(|l| l == "Hello there"), "{history}");
}

#[test]
fn user_commands_run_in_the_session_directory_and_are_recorded() {
    let s = setup(&format!("[{}]", text_reply("seen")));
    fs::write(s.work.join("marker.txt"), "").unwrap();
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("!echo hi && ls");
    pith.expect("$ echo hi && ls");
    pith.expect("hi");
    pith.expect("marker.txt");
    pith.prompt();
    pith.line("!!exit 3");
    pith.expect("(exit 3)");
    pith.prompt();
    // The file is written with the first reply; the commands go in before the prompt.
    pith.line("what did you see?");
    pith.expect("seen");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let file = &s.sessions()[0];
    assert_eq!(
        kinds(file),
        [
            "model_change",
            "thinking_level_change",
            "bashExecution",
            "bashExecution",
            "user",
            "assistant"
        ]
    );
    let entries = lines(file);
    assert_eq!(entries[3]["message"]["command"], "echo hi && ls");
    assert_eq!(entries[3]["message"]["output"], "hi\nmarker.txt\n");
    assert_eq!(entries[3]["message"]["exitCode"], 0);
    assert!(entries[3]["message"].get("excludeFromContext").is_none());
    assert_eq!(entries[4]["message"]["exitCode"], 3);
    assert_eq!(entries[4]["message"]["excludeFromContext"], true);
}

#[test]
fn name_and_session_show_what_pi_shows() {
    let s = setup(&format!("[{}]", text_reply("ok")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/name");
    pith.expect("Warning: Usage: /name <name>");
    pith.prompt();
    pith.line("/name  Refactoring work ");
    pith.expect("Session name set: Refactoring work");
    pith.prompt();
    pith.line("hi");
    pith.expect("ok");
    pith.expect("~/work • Refactoring work");
    pith.idle();
    pith.line("/session");
    let info = pith.expect("Total: 2");
    assert!(info.contains("Name: Refactoring work"), "{info}");
    assert!(
        info.contains(&format!("File: {}", s.sessions()[0].display())),
        "{info}"
    );
    assert!(
        info.contains("User: 1\nAssistant: 1\nTool Calls: 0\nTool Results: 0\nTotal: 2"),
        "{info}"
    );
    pith.expect("Tokens");
    pith.prompt();
    assert_eq!(pith.quit(), 0);

    let file = &s.sessions()[0];
    let entries = lines(file);
    assert_eq!(
        kinds(file),
        [
            "model_change",
            "thinking_level_change",
            "session_info",
            "user",
            "assistant"
        ]
    );
    assert_eq!(entries[3]["name"], "Refactoring work");
}

#[test]
fn tab_completes_slash_commands() {
    let s = setup("[]");
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.send("/sess\t");
    pith.expect("/session ");
    pith.send("\r");
    pith.expect("Session Info");
    pith.expect("File: ");
    pith.prompt();
    pith.line("/help");
    pith.expect("/thinking");
    pith.expect("alt+enter");
    pith.prompt();
    // Ctrl-D on an empty line exits, as in pi.
    pith.send("\x04");
    assert_eq!(pith.exit_code(), 0);
}

#[test]
fn fork_copies_the_path_before_a_user_message_and_puts_it_in_the_editor() {
    let s = setup(&format!(
        "[{}, {}, {}]",
        text_reply("first answer"),
        text_reply("second answer"),
        text_reply("answer in the fork")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("first question");
    pith.expect("first answer");
    pith.idle();
    pith.line("second question");
    pith.expect("second answer");
    pith.idle();
    pith.line("/fork");
    // pi's message selector, on the last message.
    pith.expect_screen("Fork from which message?");
    pith.expect_screen("first question  Message 1 of 2");
    pith.expect_screen("› second question  Message 2 of 2");
    pith.send("\r");
    pith.expect("Forked to new session");
    // The forked message is back in the editor; Enter sends it again in the fork.
    pith.expect("> second question");
    pith.send("\r");
    pith.expect("answer in the fork");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let files = s.sessions();
    assert_eq!(files.len(), 2);
    let (old, new) = if lines(&files[0])[0].get("parentSession").is_some() {
        (&files[1], &files[0])
    } else {
        (&files[0], &files[1])
    };
    assert_eq!(user_texts(old), ["first question", "second question"]);
    assert_eq!(user_texts(new), ["first question", "second question"]);
    assert_eq!(
        lines(new)[0]["parentSession"].as_str().unwrap(),
        old.to_str().unwrap()
    );
    let replies: Vec<Value> = lines(new)
        .into_iter()
        .filter(|v| v["message"]["role"] == "assistant")
        .map(|v| v["message"]["content"][0]["text"].clone())
        .collect();
    assert_eq!(replies, ["first answer", "answer in the fork"]);
}

#[test]
fn new_starts_another_session_and_clone_copies_this_one() {
    let s = setup(&format!("[{}, {}]", text_reply("one"), text_reply("two")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("in the first");
    pith.expect("one");
    pith.idle();
    pith.line("/new");
    pith.expect("✓ New session started");
    pith.prompt();
    pith.line("in the second");
    pith.expect("two");
    pith.idle();
    pith.line("/clone");
    pith.expect("Cloned to new session");
    pith.prompt();
    assert_eq!(pith.quit(), 0);

    let files = s.sessions();
    assert_eq!(files.len(), 3, "{files:?}");
    let mut texts: Vec<Vec<String>> = files.iter().map(|f| user_texts(f)).collect();
    texts.sort();
    assert_eq!(
        texts,
        [
            vec!["in the first"],
            vec!["in the second"],
            vec!["in the second"]
        ]
    );
}

#[test]
fn compact_summarizes_with_the_model_and_shows_the_result() {
    let s = setup(&format!(
        "[{}, {}, {}]",
        text_reply("answer one"),
        text_reply("answer two"),
        text_reply("## Goal\nA scripted summary.")
    ));
    // The second turn (6 tokens) fills the budget: the first one is summarized.
    s.keep_recent(4);
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/compact");
    // pi 1.6.0's compact() refuses a session with nothing to summarize.
    pith.expect("Error: Compaction failed: Nothing to compact (session too small)");
    pith.prompt();
    pith.line("question one");
    pith.expect("answer one");
    pith.idle();
    pith.line("question two");
    pith.expect("answer two");
    pith.idle();
    pith.line("/compact keep the goal");
    pith.expect("Compacting context...");
    pith.expect("[compaction]");
    pith.expect("Compacted from");
    pith.expect("?/128k");
    pith.prompt();
    assert_eq!(pith.quit(), 0);

    let file = &s.sessions()[0];
    let entries = lines(file);
    let compaction = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert!(
        compaction["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal\nA scripted summary."),
        "{compaction}"
    );
}

#[test]
fn ctrl_c_aborts_a_slow_reply_and_the_next_prompt_works() {
    let s = setup(&format!(
        r#"[{{"content": [{{"type": "text", "text": "too late"}}], "delayMs": 10000}}, {}]"#,
        text_reply("quick answer")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    let started = Instant::now();
    pith.line("take your time");
    // The editor comes back while the reply is pending.
    pith.prompt();
    pith.send("\x03");
    pith.expect("Operation aborted");
    pith.idle();
    assert!(started.elapsed() < Duration::from_secs(8));
    pith.line("again");
    pith.expect("quick answer");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let file = &s.sessions()[0];
    let replies: Vec<Value> = lines(file)
        .into_iter()
        .filter(|v| v["message"]["role"] == "assistant")
        .map(|v| v["message"]["stopReason"].clone())
        .collect();
    assert_eq!(replies, ["aborted", "stop"]);
    assert_eq!(user_texts(file), ["take your time", "again"]);
}

#[test]
fn typing_during_a_reply_steers_and_alt_enter_queues_a_follow_up() {
    // The first reply runs a slow tool: the steer and the follow-up are typed once it is
    // shown (typed before the first request, a steer goes into it, as pi takes queued
    // steering at the start of its loop).
    let s = setup(&format!(
        r#"[{{"content": [{{"type": "text", "text": "first reply"}},
                         {{"type": "toolCall", "id": "t1", "name": "bash", "arguments": {{"command": "sleep 2"}}}}]}},
            {}, {}]"#,
        text_reply("reply to the steer"),
        text_reply("reply to the follow-up")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("start");
    pith.expect("first reply");
    pith.expect("sleep 2");
    pith.prompt();
    pith.line("steer me");
    pith.expect("Steering: steer me");
    pith.prompt();
    pith.send("follow me\x1b\r");
    pith.expect("Follow-up: follow me");
    pith.expect("> steer me");
    pith.expect("reply to the steer");
    pith.expect("> follow me");
    pith.expect("reply to the follow-up");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    assert_eq!(
        user_texts(&s.sessions()[0]),
        ["start", "steer me", "follow me"]
    );
}

#[test]
fn escape_puts_queued_messages_back_into_the_editor_instead_of_running_them_later() {
    // Issue 16: a steer and a follow-up typed for a reply that Esc interrupts must not run
    // after the next prompt; pi puts them back into the editor, before what is being typed.
    let s = setup(&format!(
        r#"[{{"content": [{{"type": "text", "text": "never"}}], "delayMs": 10000}}, {}, {}]"#,
        text_reply("answer to the restored text"),
        text_reply("answer to the next question")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("start");
    pith.prompt();
    pith.line("steer me");
    pith.expect("Steering: steer me");
    pith.prompt();
    pith.send("follow me\x1b\r");
    pith.expect("Follow-up: follow me");
    pith.prompt();
    pith.send("draft");
    pith.expect("draft");
    pith.send("\x1b");
    pith.expect("Operation aborted");
    pith.idle();
    // The editor now holds the queue and the draft; Enter sends them as one prompt.
    pith.send("\r");
    pith.expect("answer to the restored text");
    pith.idle();
    pith.line("next question");
    pith.expect("answer to the next question");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(
        user_texts(&s.sessions()[0]),
        ["start", "steer me\n\nfollow me\n\ndraft", "next question"]
    );
}

#[test]
fn context_files_copy_unknown_commands_session_stats_and_the_resume_hint() {
    // Issue 16: the header lists the context files; /copy puts the last reply on the
    // clipboard through OSC 52; a mistyped /command is an error that keeps the text;
    // /session counts the file; quitting prints how to resume.
    let s = setup(&format!("[{}]", text_reply("copy me")));
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(s.agent.join("AGENTS.md"), "global rules\n").unwrap();
    fs::write(s.work.join("AGENTS.md"), "project rules\n").unwrap();
    let mut pith = s.start(&[]);
    pith.expect("[Context]");
    pith.expect("~/agent/AGENTS.md, AGENTS.md");
    pith.prompt();
    pith.line("hi");
    pith.expect("copy me");
    pith.idle();
    pith.line("/copy");
    pith.expect("Copied last agent message to clipboard");
    let raw = String::from_utf8_lossy(&pith.term.lock().unwrap().raw).into_owned();
    assert!(
        raw.contains("\x1b]52;c;Y29weSBtZQ==\x07"),
        "no OSC 52 in the output"
    );
    pith.prompt();
    pith.line("/hepl");
    pith.expect("Unknown command: /hepl. Type /help for the commands.");
    // The mistyped line is back in the editor: Ctrl-U clears it.
    pith.expect("> /hepl");
    pith.send("\x15");
    pith.line("/session");
    pith.expect("User: 1");
    pith.expect("Assistant: 1");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    let id = lines(&s.sessions()[0])[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    pith.expect("To resume this session:");
    pith.expect(&format!("pith --session {id}"));
    assert_eq!(user_texts(&s.sessions()[0]), ["hi"]);
}

#[test]
fn replies_are_rendered_as_markdown_with_their_paragraph_breaks() {
    // Issue 16: headings, emphasis, tables and code as pi renders them, and the blank lines
    // between paragraphs kept while the reply streams.
    let s = setup(&format!(
        "[{}]",
        text_reply(
            "# Plan\n\nFirst paragraph.\n\nSecond with **bold** and `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```sh\n# kept as typed\n```"
        )
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("plan it");
    pith.expect("└───┴───┘");
    pith.idle();
    let screen = pith.screen();
    let at = screen.find("Plan").expect("the heading");
    let reply: Vec<&str> = screen[at..].lines().take(14).collect();
    assert_eq!(
        reply,
        [
            "Plan",
            "",
            "First paragraph.",
            "",
            "Second with bold and code.",
            "",
            "┌───┬───┐",
            "│ a │ b │",
            "├───┼───┤",
            "│ 1 │ 2 │",
            "└───┴───┘",
            "",
            "```sh",
            "  # kept as typed",
        ]
    );
    assert_eq!(pith.quit(), 0);
}

#[test]
fn pi_keys_add_lines_open_selectors_and_the_tree() {
    let s = setup(&format!(
        "[{}, {}]",
        r#"{"content": [{"type": "thinking", "thinking": "SECRET THOUGHT"}, {"type": "text", "text": "first"}]}"#,
        text_reply("second")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    // Ctrl-J: a second line in the same prompt.
    pith.send("line one\n");
    pith.send("line two\r");
    pith.expect("first");
    pith.idle();
    // Ctrl-T hides thinking blocks from now on.
    pith.send("\x14");
    pith.expect("Thinking blocks: hidden");
    pith.prompt();
    // Ctrl-O toggles (pi's app.tools.expand); nothing has run yet, so nothing is shown.
    pith.send("\x0f");
    pith.expect("Tool output: expanded");
    pith.prompt();
    pith.send("\x0f");
    pith.expect("Tool output: collapsed");
    pith.prompt();
    // Ctrl-L opens the model selector; what was typed stays in the editor.
    pith.send("draft");
    pith.expect("draft");
    pith.send("\x0c");
    pith.expect_screen("Select model");
    pith.send("\x1b");
    pith.expect("Current model: faux/faux-1");
    pith.expect("> draft");
    pith.send("\x15");
    // Esc Esc on an idle editor opens /tree.
    // (Apart, as fingers press them: two in one read are Alt-Esc.)
    pith.send("\x1b");
    std::thread::sleep(Duration::from_millis(100));
    pith.send("\x1b");
    pith.expect_screen("Session Tree");
    pith.send("\x1b");
    pith.prompt();
    pith.line("again");
    pith.expect("second");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(
        user_texts(&s.sessions()[0]),
        ["line one\nline two", "again"]
    );
}

#[test]
fn escape_interrupts_a_reply() {
    let s = setup(r#"[{"content": [{"type": "text", "text": "never"}], "delayMs": 10000}]"#);
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("wait");
    pith.prompt();
    pith.send("\x1b");
    pith.expect("Operation aborted");
    pith.idle();
    // Two Ctrl-C within half a second exit.
    pith.send("\x03");
    pith.prompt();
    pith.send("\x03");
    assert_eq!(pith.exit_code(), 0);
}

#[test]
fn model_thinking_and_label_change_the_session() {
    let s = setup(&format!("[{}]", text_reply("labelled")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/model");
    pith.expect_screen("Select model");
    pith.expect_screen("› faux/faux-1  ✓ current");
    pith.send("\x1b");
    pith.expect("Current model: faux/faux-1");
    pith.prompt();
    pith.line("/thinking");
    // The offline model does not reason: off is its only level. Described as pi describes
    // it, under pi's hint; Ctrl+S sets it as the default.
    pith.expect_screen("› ✓ off  No reasoning");
    assert!(
        pith.screen()
            .contains("shift+tab cycles thinking levels in-session"),
        "{}",
        pith.screen()
    );
    pith.send("\r");
    pith.expect("Thinking level: off");
    pith.prompt();
    pith.line("/thinking");
    pith.expect_screen("› ✓ off  No reasoning");
    pith.send("\x13");
    pith.expect("Default thinking level: off");
    pith.prompt();
    let settings: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(s.agent.join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings["defaultThinkingLevel"], "off");
    pith.line("/model faux/faux-1");
    pith.expect("Model: faux-1");
    pith.prompt();
    pith.line("/thinking high");
    // The offline model does not reason: pi clamps every level to off.
    pith.expect("Thinking level: off");
    pith.prompt();
    pith.line("/thinking loud");
    pith.expect("Error: unknown thinking level loud");
    pith.prompt();
    pith.line("hello");
    pith.expect("labelled");
    pith.idle();
    pith.line("/label checkpoint");
    pith.expect("Label set on");
    pith.prompt();
    assert_eq!(pith.quit(), 0);

    let file = &s.sessions()[0];
    assert_eq!(
        kinds(file),
        [
            "model_change",
            "thinking_level_change",
            "model_change",
            "user",
            "assistant",
            "label"
        ]
    );
    let entries = lines(file);
    assert_eq!(entries[6]["label"], "checkpoint");
    assert_eq!(entries[6]["targetId"], entries[5]["id"]);
}

#[test]
fn export_jsonl_and_import_round_trip() {
    let s = setup(&format!("[{}]", text_reply("exported")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("export me");
    pith.expect("exported");
    pith.idle();
    pith.line("/export out/copy.jsonl");
    pith.expect("Session exported to: ");
    pith.prompt();
    let copy = s.work.join("out/copy.jsonl");
    let exported = lines(&copy);
    assert_eq!(exported[0]["type"], "session");
    assert!(exported[0].get("parentSession").is_none());
    assert_eq!(exported[1]["parentId"], Value::Null);
    for pair in exported[1..].windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"]);
    }
    assert_eq!(user_texts(&copy), ["export me"]);

    pith.line("/import out/copy.jsonl");
    pith.expect_screen("Replace current session with out/copy.jsonl?");
    pith.send("\x1b[B");
    pith.expect_screen("› No");
    pith.send("\r");
    pith.expect("Import cancelled");
    pith.prompt();
    pith.line("/import out/copy.jsonl");
    pith.expect_screen("› Yes");
    pith.send("\r");
    pith.expect("> export me");
    pith.expect("Session imported from: out/copy.jsonl");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    // The copy went into the session directory, under its own name.
    assert!(s.sessions().iter().any(|f| f.ends_with("copy.jsonl")));
}

#[test]
fn tree_moves_back_to_an_earlier_prompt_and_summarizes_the_branch_left() {
    let s = setup(&format!(
        "[{}, {}, {}, {}]",
        text_reply("reply A"),
        text_reply("reply B"),
        text_reply("The abandoned branch asked two."),
        text_reply("reply C")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("one");
    pith.expect("reply A");
    pith.idle();
    pith.line("two");
    pith.expect("reply B");
    pith.idle();
    pith.line("/tree");
    // The view opens on the leaf (reply B); one up is the prompt "two".
    pith.expect_screen("Type to search:");
    pith.expect_screen("reply B");
    pith.send("\x1b[A");
    pith.send("\r");
    pith.expect("Summarize branch?");
    pith.send("\x1b[B");
    pith.send("\r");
    pith.expect("Summarizing branch... (escape to cancel)");
    pith.expect("Navigated to selected point");
    // The prompt left behind is back in the editor, to edit or send again.
    pith.expect("> two");
    pith.send("\r");
    pith.expect("reply C");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let file = &s.sessions()[0];
    assert_eq!(user_texts(file), ["one", "two", "two"]);
    let entries = lines(file);
    let summary = entries
        .iter()
        .find(|e| e["type"] == "branch_summary")
        .unwrap();
    assert!(
        summary["summary"]
            .as_str()
            .unwrap()
            .contains("The abandoned branch asked two."),
        "{summary}"
    );
    let reply_a = entries
        .iter()
        .find(|e| e["message"]["content"][0]["text"] == "reply A")
        .unwrap();
    assert_eq!(summary["parentId"], reply_a["id"]);
    let again = entries
        .iter()
        .rfind(|e| e["message"]["role"] == "user")
        .unwrap();
    assert_eq!(again["parentId"], summary["id"]);
}

#[test]
fn resume_picks_another_session_of_this_project() {
    let s = setup(&format!(
        "[{}, {}, {}]",
        text_reply("reply A"),
        text_reply("reply B"),
        text_reply("reply C")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("in the first session");
    pith.expect("reply A");
    pith.idle();
    pith.line("/new");
    pith.expect("New session started");
    pith.idle();
    pith.line("in the second session");
    pith.expect("reply B");
    pith.idle();
    pith.line("/resume");
    // Newest first: the second session, then the first.
    pith.expect_screen("Resume Session");
    pith.expect_screen("in the first session");
    pith.send("\x1b[B");
    pith.send("\r");
    pith.expect("> in the first session");
    pith.expect("Resumed session");
    pith.idle();
    pith.line("back in the first");
    pith.expect("reply C");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let files = s.sessions();
    assert_eq!(files.len(), 2);
    let mut texts: Vec<Vec<String>> = files.iter().map(|f| user_texts(f)).collect();
    texts.sort();
    assert_eq!(
        texts,
        [
            vec!["in the first session", "back in the first"],
            vec!["in the second session"]
        ]
    );
}

#[test]
fn continue_shows_the_conversation_and_goes_on_in_the_same_file() {
    let s = setup(&format!(
        "[{}, {}]",
        text_reply("earlier answer"),
        text_reply("later")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("earlier question");
    pith.expect("earlier answer");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    // A new process starts the script again: its first reply answers the next prompt.
    let mut pith = s.start(&["-c"]);
    pith.expect("> earlier question");
    pith.expect("earlier answer");
    pith.idle();
    pith.line("later question");
    pith.expect("earlier answer");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    let files = s.sessions();
    assert_eq!(files.len(), 1);
    assert_eq!(
        user_texts(&files[0]),
        ["earlier question", "later question"]
    );
}

#[test]
fn messages_on_the_command_line_are_the_first_prompts() {
    let s = setup(&format!(
        "[{}, {}]",
        text_reply("first reply"),
        text_reply("second reply")
    ));
    let mut pith = s.start(&[
        "first prompt",
        "/name from the command line",
        "second prompt",
    ]);
    pith.expect("> first prompt");
    pith.expect("first reply");
    pith.expect("Session name set: from the command line");
    pith.expect("> second prompt");
    pith.expect("second reply");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(
        user_texts(&s.sessions()[0]),
        ["first prompt", "second prompt"]
    );
}

#[test]
fn dash_r_opens_the_picker_before_starting() {
    let s = setup(&format!(
        "[{}, {}]",
        text_reply("reply A"),
        text_reply("reply B")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("remember me");
    pith.expect("reply A");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let mut pith = s.start(&["-r"]);
    pith.expect_screen("Resume Session");
    pith.expect_screen("remember me");
    pith.send("\x1b");
    pith.expect("No session selected");
    assert_eq!(pith.exit_code(), 0);

    let mut pith = s.start(&["-r"]);
    pith.expect_screen("remember me");
    pith.send("\r");
    pith.expect("> remember me");
    pith.expect("reply A");
    pith.idle();
    pith.line("and more");
    // A new process plays the script from its start again.
    pith.expect("reply A");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    let files = s.sessions();
    assert_eq!(files.len(), 1);
    assert_eq!(user_texts(&files[0]), ["remember me", "and more"]);
}

/// Opening a session at a search hit (`--session FILE@ENTRY`, what the picker's Enter on a
/// hit does) says that later entries are out of view and where a prompt goes.
#[test]
fn a_session_opened_at_a_search_hit_says_later_entries_are_out_of_view() {
    let s = setup(&format!(
        "[{}, {}, {}]",
        text_reply("reply A"),
        text_reply("reply B"),
        text_reply("reply C")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("first prompt");
    pith.expect("reply A");
    pith.idle();
    pith.line("second prompt");
    pith.expect("reply B");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    let file = s.sessions()[0].clone();
    let entries: Vec<serde_json::Value> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_reply = entries
        .iter()
        .find(|e| e["message"]["role"] == "assistant")
        .and_then(|e| e["id"].as_str())
        .unwrap()
        .to_owned();
    let later = entries.len()
        - 1
        - entries
            .iter()
            .position(|e| e["id"] == first_reply.as_str())
            .unwrap();
    let at = format!("{}@{first_reply}", file.display());
    let mut pith = s.start(&["--session", &at]);
    pith.expect("> first prompt");
    pith.expect(&format!(
        "Opened at the search hit. {later} later entries are not in view"
    ));
    pith.idle();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn without_a_terminal_on_stdin_it_is_print_mode_as_in_pi() {
    let s = setup(&format!("[{}]", text_reply("piped reply")));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pith"));
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .env("PITH_AGENT_DIR", &s.agent)
        .current_dir(&s.work)
        .arg("--faux-script")
        .arg(&s.script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from a pipe")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "piped reply\n");
    assert_eq!(user_texts(&s.sessions()[0]), ["from a pipe"]);
}

#[test]
fn sigterm_quits_cleanly_with_the_session_saved() {
    let s = setup(&format!("[{}]", text_reply("saved before the signal")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("hello");
    pith.expect("saved before the signal");
    pith.idle();
    let status = format!("{:?}", pith.process.exit().unwrap());
    assert!(
        status.starts_with("Exited(") && status.ends_with(", 0)"),
        "{status}"
    );
    assert_eq!(
        kinds(&s.sessions()[0]),
        ["model_change", "thinking_level_change", "user", "assistant"]
    );
    // The shell's prompt will start on a line of its own.
    assert!(!pith.transcript().ends_with("> "));
}

/// A reply the test never waits for: the faux model holds it ten minutes.
fn late_reply(text: &str) -> String {
    format!(r#"{{"content": [{{"type": "text", "text": "{text}"}}], "delayMs": 600000}}"#)
}

#[test]
fn escape_cancels_a_compaction_and_nothing_is_written() {
    let s = setup(&format!(
        "[{}, {}, {}]",
        text_reply("reply A"),
        text_reply("reply B"),
        late_reply("LATE SUMMARY")
    ));
    // The second turn (3 tokens) fills the budget: the first one is to be summarized.
    s.keep_recent(3);
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("one");
    pith.expect("reply A");
    pith.idle();
    pith.line("two");
    pith.expect("reply B");
    pith.idle();
    pith.line("/compact");
    pith.expect("Compacting");
    let asked = Instant::now();
    pith.send("\x1b");
    pith.expect("Error: Compaction cancelled");
    // Seconds, not the ten minutes of the summary (the 100 ms bound is the runtime's test).
    assert!(asked.elapsed() < Duration::from_secs(10));
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    assert!(!kinds(&s.sessions()[0]).contains(&"compaction".to_owned()));
}

#[test]
fn escape_cancels_a_branch_summary_and_the_tree_opens_again() {
    let s = setup(&format!(
        "[{}, {}, {}]",
        text_reply("reply A"),
        text_reply("reply B"),
        late_reply("LATE SUMMARY")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("one");
    pith.expect("reply A");
    pith.idle();
    pith.line("two");
    pith.expect("reply B");
    pith.idle();
    let before = fs::read_to_string(&s.sessions()[0]).unwrap();
    pith.line("/tree");
    pith.expect_screen("(4/4)");
    pith.send("\x1b[A");
    // The key after the arrow goes only once the selection has moved: under load the two
    // can otherwise reach the view in one read before it has drawn.
    pith.expect_screen("(3/4)");
    pith.send("\r");
    pith.expect("Summarize branch?");
    pith.send("\x1b[B");
    pith.send("\r");
    pith.expect("Summarizing branch... (escape to cancel)");
    let asked = Instant::now();
    pith.send("\x1b");
    pith.expect("Branch summarization cancelled");
    assert!(asked.elapsed() < Duration::from_secs(10));
    // pi shows the tree again, on the same entry; leaving it changes nothing.
    pith.expect_screen("Type to search:");
    pith.send("\x1b");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    assert_eq!(fs::read_to_string(&s.sessions()[0]).unwrap(), before);
}

#[test]
fn escape_sequences_from_the_model_and_tools_never_reach_the_terminal() {
    // Issue 13: a reply (streamed, split anywhere) and a tool's output that would set the
    // clipboard, the window title and a colour of their own are shown as plain text.
    let s = setup(
        r#"[{"content": [{"type": "text", "text": "before\u001b]52;c;cHduZWQ=\u0007after \u001b]0;owned\u0007title \u001b[38;5;201mpink\u001b[0m end"},
                        {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "printf '\\033]52;c;dG9vbA==\\007tool-out\\n' # \u001b]0;arg\u0007"}}]},
            {"content": [{"type": "text", "text": "done"}]}]"#,
    );
    let mut pith = s.start(&[]);
    pith.expect("pith v");
    pith.prompt();
    pith.line("go");
    pith.expect("beforeafter title pink end");
    pith.expect("tool-out");
    pith.expect("done");
    pith.idle();
    let raw = pith.term.lock().unwrap().raw.clone();
    for forbidden in [&b"\x1b]52"[..], b"\x1b]0;", b"38;5;201m", b"\x07"] {
        assert!(
            !raw.windows(forbidden.len()).any(|w| w == forbidden),
            "{:?} reached the terminal",
            String::from_utf8_lossy(forbidden)
        );
    }
    assert_eq!(pith.quit(), 0);
}

#[test]
fn an_extension_dialog_is_asked_in_the_transcript_and_the_typed_answer_decides() {
    let s = setup(
        r#"[{"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "rm -rf build"}}]},
            {"content": [{"type": "text", "text": "all done"}]}]"#,
    );
    let gate = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/extensions/python/permission_gate.py");
    let mut pith = s.start(&["-e", gate.to_str().unwrap()]);
    pith.expect("pith v");
    pith.prompt();
    pith.line("clean up");
    pith.expect("Dangerous command:");
    pith.expect("2. No");
    pith.line("2");
    pith.expect("all done");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    let entries = lines(&s.sessions()[0]);
    let result = entries
        .iter()
        .find(|e| e["message"]["role"] == "toolResult")
        .unwrap();
    assert_eq!(result["message"]["content"][0]["text"], "Blocked by user");
}

#[test]
fn a_switch_guard_asks_in_the_transcript_while_new_waits_for_it() {
    let s = setup("[]");
    let guard = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/guard.py");
    let mut pith = s.start(&["-e", guard.to_str().unwrap()]);
    pith.expect("pith v");
    pith.prompt();
    pith.line("/new");
    pith.expect("Start a new session?");
    pith.line("n");
    pith.expect("Cancelled: kept the session");
    assert_eq!(pith.quit(), 0);
}

#[test]
fn prompt_templates_and_skills_are_commands_that_expand() {
    // Issue 18: templates and skills complete with Tab, are listed by /help, are not
    // "Unknown command"s, and reach the session expanded as pi expands them.
    let s = setup(&format!(
        "[{},{}]",
        text_reply("reviewed"),
        text_reply("used")
    ));
    fs::create_dir_all(s.agent.join("prompts")).unwrap();
    fs::write(
        s.agent.join("prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 for ${2:-bugs}\n",
    )
    .unwrap();
    fs::create_dir_all(s.agent.join("skills/pdf-tools")).unwrap();
    fs::write(
        s.agent.join("skills/pdf-tools/SKILL.md"),
        "---\ndescription: Work with PDFs\n---\nPDF steps\n",
    )
    .unwrap();
    fs::create_dir_all(s.agent.join("skills/Bad")).unwrap();
    fs::write(s.agent.join("skills/Bad/SKILL.md"), "---\nname: x\n---\n").unwrap();
    fs::write(s.agent.join("APPEND_SYSTEM.md"), "Also this.").unwrap();
    let mut pith = s.start(&[]);
    // pi's startup listing: the prompt's files, what was loaded, then what was wrong.
    pith.expect("[Context]");
    pith.expect("~/agent/APPEND_SYSTEM.md");
    pith.expect("[Skills]");
    pith.expect("  pdf-tools");
    pith.expect("[Prompts]");
    pith.expect("  /review");
    pith.expect("[Skill warnings]");
    pith.expect("~/agent/skills/Bad/SKILL.md");
    pith.expect("    description is required");
    pith.prompt();
    pith.line("/help");
    pith.expect("<file> — Review a file");
    pith.expect("Work with PDFs");
    pith.prompt();
    pith.send("/rev\t");
    pith.expect("/review ");
    pith.send("\"a b.rs\"\r");
    pith.expect("reviewed");
    pith.idle();
    pith.line("/skill:pdf-tools now");
    pith.expect("used");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    let skill = s.agent.join("skills/pdf-tools");
    assert_eq!(
        user_texts(&s.sessions()[0]),
        [
            "Review a b.rs for bugs".to_owned(),
            format!(
                "<skill name=\"pdf-tools\" location=\"{}/SKILL.md\">\nReferences are relative to {}.\n\nPDF steps\n</skill>\n\nnow",
                skill.display(),
                skill.display()
            )
        ]
    );
}

#[test]
fn mcp_shows_reconnects_disables_and_enables_servers() {
    use crate::mcp::support::{eventually, processes_naming};
    let list = serde_json::json!({"content":[{"type":"toolCall","id":"l","name":"mcp__filesystem__list_directory",
                                              "arguments":{"path":"."}}]})
    .to_string();
    let s = setup(&format!(
        "[{list}, {}, {list}, {}, {list}, {}]",
        text_reply("one"),
        text_reply("two"),
        text_reply("three")
    ));
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/mcp-servers/node_modules/.bin/mcp-server-filesystem");
    assert!(server.exists(), "run scripts/install-mcp-servers");
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(s.work.join("a.txt"), "alpha").unwrap();
    let config = s.agent.join("mcp.json");
    let entry = serde_json::json!({"command": server, "args":[&s.work]});
    fs::write(
        &config,
        serde_json::json!({"mcpServers":{
            "filesystem": entry,
            "off":{"command":"nothing","enabled":false}}})
        .to_string(),
    )
    .unwrap();
    let saved = || -> Value {
        serde_json::from_str::<Value>(&fs::read_to_string(&config).unwrap()).unwrap()["mcpServers"]
            ["filesystem"]
            .clone()
    };
    // The server's command line names the work directory; pith's does not.
    // The servers, not their guards (`pith __guard …`).
    let running = || {
        let mut found = processes_naming(&s.work.display().to_string());
        found.retain(|cmdline| !cmdline.contains(" __guard "));
        found
    };
    let mut pith = s.start(&[]);
    pith.prompt();
    // `/mcp` waits for servers still connecting, as pi's does.
    pith.line("/mcp");
    pith.expect("filesystem: connected, ");
    pith.expect("mcp__filesystem__read_text_file");
    pith.expect("off: disabled (nothing)");
    pith.prompt();
    pith.line("/mcp reconnect filesystem");
    pith.expect(r#"Reconnected to MCP server "filesystem" (connected, "#);
    pith.prompt();
    pith.line("list it");
    pith.idle();
    // Disabled: stopped, its tools gone, saved.
    pith.line("/mcp disable filesystem");
    pith.expect(r#"Disabled MCP server "filesystem"."#);
    pith.prompt();
    assert!(eventually(|| running().is_empty()), "{:?}", running());
    assert_eq!(saved()["enabled"], false);
    pith.line("list it again");
    pith.idle();
    pith.line("/mcp");
    pith.expect("filesystem: disabled (");
    pith.prompt();
    // Enabled: running again, saved without `enabled` (the default), as pi writes it.
    pith.line("/mcp enable filesystem");
    pith.expect(r#"Enabled MCP server "filesystem" (connected, "#);
    pith.prompt();
    assert_eq!(running().len(), 1, "{:?}", running());
    assert_eq!(saved(), entry);
    pith.line("and once more");
    pith.idle();
    pith.line("/mcp enable nothing-here");
    pith.expect(r#"Error: No MCP server named "nothing-here"."#);
    pith.prompt();
    pith.line("/mcp frobnicate");
    pith.expect("Warning: Usage: /mcp, /mcp reconnect <server>");
    pith.prompt();
    pith.send("\x04");
    assert_eq!(pith.exit_code(), 0);
    assert!(eventually(|| running().is_empty()), "{:?}", running());
    let results: Vec<(String, bool)> = lines(&s.sessions()[0])
        .iter()
        .filter(|v| v["message"]["role"] == "toolResult")
        .map(|v| {
            (
                v["message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                v["message"]["isError"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("[FILE] a.txt".to_owned(), false),
            (
                "Tool mcp__filesystem__list_directory not found".to_owned(),
                true
            ),
            ("[FILE] a.txt".to_owned(), false),
        ]
    );
}

#[test]
fn a_destructive_mcp_tool_is_confirmed_in_the_transcript() {
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/mcp-servers/node_modules/.bin/mcp-server-filesystem");
    assert!(server.exists(), "run scripts/install-mcp-servers");
    let s = setup("[]");
    let (out, notes) = (s.work.join("out.txt"), s.work.join("notes.txt"));
    fs::write(&notes, "the secret is 42\n").unwrap();
    let call = |id: &str, name: &str, args: Value| serde_json::json!({"content":[{"type":"toolCall","id":id,"name":name,"arguments":args}]});
    fs::write(
        &s.script,
        serde_json::json!([
            call("w1", "mcp__filesystem__write_file", serde_json::json!({"path": out, "content": "no"})),
            call("r1", "mcp__filesystem__read_text_file", serde_json::json!({"path": notes})),
            {"content":[{"type":"text","text":"all done"}]},
            call("w2", "mcp__filesystem__write_file", serde_json::json!({"path": out, "content": "yes"})),
            {"content":[{"type":"text","text":"written"}]}
        ])
        .to_string(),
    )
    .unwrap();
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(
        s.agent.join("mcp.json"),
        serde_json::json!({"mcpServers":{"filesystem":{"command": server, "args":[&s.work]}}})
            .to_string(),
    )
    .unwrap();
    let gate = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("examples/extensions/python/mcp_approval.py");
    let mut pith = s.start(&["-e", gate.to_str().unwrap()]);
    pith.prompt();
    pith.line("tidy up");
    // Only the destructive call asks; no, and it is blocked.
    pith.expect("Allow mcp__filesystem__write_file?");
    pith.expect("mcp:filesystem marks it destructive.");
    pith.line("n");
    pith.expect("all done");
    pith.idle();
    assert!(!out.exists());
    pith.line("write it");
    pith.expect("Allow mcp__filesystem__write_file?");
    pith.line("y");
    pith.expect("written");
    pith.idle();
    assert_eq!(fs::read_to_string(&out).unwrap(), "yes");
    assert_eq!(pith.quit(), 0);
    let results: Vec<(String, bool)> = lines(&s.sessions()[0])
        .iter()
        .filter(|v| v["message"]["role"] == "toolResult")
        .map(|v| {
            (
                v["message"]["toolName"].as_str().unwrap().to_owned(),
                v["message"]["isError"].as_bool().unwrap(),
            )
        })
        .collect();
    let names = [
        "mcp__filesystem__write_file",
        "mcp__filesystem__read_text_file",
    ];
    assert_eq!(
        results,
        [
            (names[0].to_owned(), true),
            (names[1].to_owned(), false),
            (names[0].to_owned(), false),
        ]
    );
}

#[test]
fn an_image_given_as_a_file_argument_goes_with_the_first_prompt() {
    let s = setup(&format!(
        "[{}, {}]",
        text_reply("A gradient."),
        text_reply("Noted.")
    ));
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(image::RgbImage::from_fn(8, 6, |x, y| {
        image::Rgb([x as u8 * 30, y as u8 * 40, 0])
    }))
    .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
    .unwrap();
    fs::write(s.work.join("shot.png"), &png).unwrap();
    let mut pith = s.start(&["@shot.png", "what is this"]);
    pith.expect("A gradient.");
    pith.idle();
    pith.line("and now?");
    pith.expect("Noted.");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let files = s.sessions();
    let users: Vec<Value> = lines(&files[0])
        .into_iter()
        .filter(|v| v["message"]["role"] == "user")
        .map(|v| v["message"]["content"].clone())
        .collect();
    use base64::Engine;
    assert_eq!(
        users,
        [
            serde_json::json!([
                {"type": "text", "text": format!("<file name=\"{}\"></file>\nwhat is this",
                    s.work.join("shot.png").display())},
                {"type": "image", "mimeType": "image/png",
                    "data": base64::engine::general_purpose::STANDARD.encode(&png)}
            ]),
            serde_json::json!([{"type": "text", "text": "and now?"}]),
        ]
    );
}

/// Ctrl-V with an image on an X11 clipboard: pith asks `xclip` (a stand-in script on PATH
/// that answers as xclip does) for the types, then the PNG, saves it in the temp folder and
/// puts its path into the editor, as pi 1.6.0 does; the prompt carries the path as text.
#[test]
fn ctrl_v_pastes_a_clipboard_image_as_a_file_path() {
    use std::os::unix::fs::PermissionsExt;
    let s = setup(&format!("[{}]", text_reply("I will read it.")));
    let bin = s.root.join("bin");
    let tmp = s.root.join("tmp");
    fs::create_dir_all(&bin).unwrap();
    fs::create_dir_all(&tmp).unwrap();
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(image::RgbImage::new(4, 4))
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    fs::write(s.root.join("clip.png"), &png).unwrap();
    let xclip = bin.join("xclip");
    fs::write(
        &xclip,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *TARGETS*) printf 'TARGETS\\ntext/plain\\nimage/png\\n' ;;\n  *image/png*) cat '{}' ;;\n  *) exit 1 ;;\nesac\n",
            s.root.join("clip.png").display()
        ),
    )
    .unwrap();
    fs::set_permissions(&xclip, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut pith = s.start_with_env(
        &[],
        &[
            ("PATH", path.as_ref()),
            ("DISPLAY", ":99".as_ref()),
            ("WAYLAND_DISPLAY", "".as_ref()),
            ("TMPDIR", tmp.as_os_str()),
        ],
    );
    pith.expect("pith v");
    pith.prompt();
    pith.send("look at \x16");
    pith.expect("pith-clipboard-");
    pith.send(" please\r");
    pith.expect("I will read it.");
    pith.idle();
    assert_eq!(pith.quit(), 0);

    let saved: Vec<PathBuf> = fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(fs::read(&saved[0]).unwrap(), png);
    let name = saved[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("pith-clipboard-") && name.ends_with(".png"),
        "{name}"
    );
    assert_eq!(
        user_texts(&s.sessions()[0]),
        [format!("look at {} please", saved[0].display())]
    );
}
