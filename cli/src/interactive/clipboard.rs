//! Ctrl-V in the editor (pi 1.6.0's `app.clipboard.pasteImage`, `handleClipboardPaste`): an
//! image on the clipboard is written to a temporary file whose path goes into the editor at
//! the cursor (the model then reads it with `read`); otherwise the clipboard's text is
//! inserted.
//!
//! pi reads the clipboard through the same programs on Linux (`utils/clipboard-image.js`,
//! `utils/clipboard.js`): `wl-paste` in a Wayland session, then `xclip`; text through
//! `wl-paste`, `xclip` or `xsel`. Each runs from `/` in its own process group with a time
//! limit. pi's extra fallbacks are not here: its native clipboard module (macOS Finder
//! file copies, other platforms), Windows' clipboard from WSL through PowerShell, and
//! Termux's `termux-clipboard-get`.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// pi's order of preference among the image types a clipboard offers.
const PREFERRED: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];
/// pi's limits: listing the types, reading the data, reading text.
const LIST_TIMEOUT: Duration = Duration::from_millis(1000);
const READ_TIMEOUT: Duration = Duration::from_millis(3000);
const TEXT_TIMEOUT: Duration = Duration::from_millis(5000);
/// pi's `maxBufferBytes`.
const MAX_BYTES: usize = 50 * 1024 * 1024;

/// What Ctrl-V inserts: the path of the clipboard's image, saved as
/// `<temp dir>/pith-clipboard-<uuid>.<ext>`, else the clipboard's text; `None` when there
/// is neither (or no clipboard program answered).
pub(super) fn paste() -> Option<String> {
    if let Some((bytes, mime)) = read_image() {
        let ext = extension(mime).unwrap_or("png");
        let path: PathBuf =
            std::env::temp_dir().join(format!("pith-clipboard-{}.{ext}", uuid::Uuid::new_v4()));
        return match std::fs::write(&path, bytes) {
            Ok(()) => Some(path.to_string_lossy().into_owned()),
            Err(e) => {
                tracing::warn!("Failed to paste from clipboard: {}: {e}", path.display());
                None
            }
        };
    }
    read_text()
}

fn base(mime: &str) -> String {
    mime.split(';').next().unwrap_or(mime).trim().to_lowercase()
}

/// pi's `extensionForImageMimeType`.
fn extension(mime: &str) -> Option<&'static str> {
    match base(mime).as_str() {
        "image/png" => Some("png"),
        "image/jpeg" => Some("jpg"),
        "image/webp" => Some("webp"),
        "image/gif" => Some("gif"),
        _ => None,
    }
}

/// pi's `selectPreferredImageMimeType`: the first of [`PREFERRED`] offered, else any
/// `image/*` type.
fn preferred(types: &str) -> Option<String> {
    let offered: Vec<&str> = types
        .lines()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    PREFERRED
        .iter()
        .find_map(|p| offered.iter().find(|t| base(t) == *p))
        .or_else(|| offered.iter().find(|t| base(t).starts_with("image/")))
        .map(|t| (*t).to_owned())
}

/// The clipboard's image and its type; `None` when there is none or no program answered.
/// A type providers do not take (a BMP) is converted to PNG, as pi does.
fn read_image() -> Option<(Vec<u8>, &'static str)> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let wayland = env("WAYLAND_DISPLAY").is_some()
        || std::env::var("XDG_SESSION_TYPE").is_ok_and(|t| t == "wayland");
    let wsl = env("WSL_DISTRO_NAME").is_some() || env("WSL_INTEROP").is_some();
    // `Err` is "the program failed" (try the next), `Ok(None)` "no image" (stop).
    let mut image = Err(());
    if wayland || wsl {
        image = via("wl-paste", &["--list-types"], |t| {
            vec!["--type".to_owned(), t.to_owned(), "--no-newline".to_owned()]
        });
    }
    if image.is_err() {
        image = via(
            "xclip",
            &["-selection", "clipboard", "-t", "TARGETS", "-o"],
            |t| {
                ["-selection", "clipboard", "-t", t, "-o"]
                    .map(str::to_owned)
                    .to_vec()
            },
        );
    }
    let (bytes, mime) = image.ok()??;
    match PREFERRED.iter().find(|p| **p == base(&mime)) {
        Some(p) => Some((bytes, *p)),
        None => match pith_tools::image::process(&bytes, &mime, false) {
            pith_tools::image::Processed::Ok { data, .. } => {
                use base64::Engine;
                let png = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .ok()?;
                Some((png, "image/png"))
            }
            pith_tools::image::Processed::Omitted(_) => None,
        },
    }
}

/// Lists the types with `list`, then reads the preferred image type with `read(type)`.
fn via(
    program: &str,
    list: &[&str],
    read: impl Fn(&str) -> Vec<String>,
) -> Result<Option<(Vec<u8>, String)>, ()> {
    let types = run(program, list, LIST_TIMEOUT).ok_or(())?;
    let Some(chosen) = preferred(&String::from_utf8_lossy(&types)) else {
        return Ok(None);
    };
    let args = read(&chosen);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let data = run(program, &args, READ_TIMEOUT).ok_or(())?;
    Ok((!data.is_empty()).then(|| (data, base(&chosen))))
}

/// pi's `readClipboardText`: the first of `wl-paste` (Wayland), `xclip`, `xsel` (X11) that
/// runs; empty text is none.
fn read_text() -> Option<String> {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let mut commands: Vec<(&str, &[&str])> = Vec::new();
    if set("WAYLAND_DISPLAY") {
        commands.push(("wl-paste", &["--no-newline", "--type", "text"]));
    }
    if set("DISPLAY") {
        commands.push(("xclip", &["-selection", "clipboard", "-out"]));
        commands.push(("xsel", &["--clipboard", "--output"]));
    }
    commands
        .into_iter()
        .find_map(|(program, args)| {
            run(program, args, TEXT_TIMEOUT)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        })
        .filter(|t| !t.is_empty())
}

/// pi's `runClipboardCommand`: `program args` from `/`, in its own process group (a
/// clipboard owner that stays behind is not stopped with pith), stdout collected up to
/// [`MAX_BYTES`]; `None` when it cannot start, fails, or runs past `timeout` (killed).
fn run(program: &str, args: &[&str], timeout: Duration) -> Option<Vec<u8>> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let ok = (&mut stdout)
            .take(MAX_BYTES as u64 + 1)
            .read_to_end(&mut out)
            .is_ok();
        (ok && out.len() <= MAX_BYTES).then_some(out)
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                // The whole group: a helper it started must not keep the pipe open.
                if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = reader.join().ok()??;
    status.filter(|s| s.success()).map(|_| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preferred_image_type_is_pis() {
        assert_eq!(
            preferred("TARGETS\nimage/gif\nimage/png\n").as_deref(),
            Some("image/png")
        );
        assert_eq!(
            preferred("text/plain\nimage/bmp").as_deref(),
            Some("image/bmp")
        );
        assert_eq!(preferred("UTF8_STRING\ntext/plain"), None);
        assert_eq!(extension("image/jpeg; q=1"), Some("jpg"));
    }
}
