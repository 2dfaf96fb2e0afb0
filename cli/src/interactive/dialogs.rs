//! Extension dialogs in the interactive mode (spec: extensions.md §1.2 "Dialogs"): a simple
//! rendering in the transcript, answered by the next line typed (as `/fork`'s question is).
//! `select` lists numbered options (a number or an option's text picks it), `confirm` takes
//! y/yes, `input` takes the line; an empty line cancels.

use serde_json::{Value, json};

use super::style;

/// A dialog waiting for the next line.
#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    /// The runtime's id for it.
    pub id: String,
    /// `select`, `confirm` or `input`.
    pub method: String,
    /// `select`'s options.
    pub options: Vec<String>,
}

/// The lines to show for a dialog request, and the dialog; `None` for requests that ask
/// nothing (`notify`, `setStatus`), whose line is returned alone.
pub fn show(id: &str, method: &str, params: &Value) -> (Vec<String>, Option<Dialog>) {
    let text = |k: &str| params.get(k).and_then(Value::as_str).unwrap_or_default();
    match method {
        "select" | "confirm" | "input" => {
            let options: Vec<String> = params
                .get("options")
                .and_then(Value::as_array)
                .map(|o| {
                    o.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let mut lines = vec![String::new(), style::bold(text("title"))];
            if !text("message").is_empty() {
                lines.push(text("message").to_owned());
            }
            match method {
                "select" => {
                    for (i, o) in options.iter().enumerate() {
                        lines.push(format!("  {}. {o}", i + 1));
                    }
                    lines.push(style::dim("Type a number (empty line cancels)"));
                }
                "confirm" => lines.push(style::dim("[y/N]")),
                _ => lines.push(style::dim(&format!(
                    "Type the answer{}",
                    if text("placeholder").is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", text("placeholder"))
                    }
                ))),
            }
            let dialog = Dialog {
                id: id.to_owned(),
                method: method.to_owned(),
                options,
            };
            (lines, Some(dialog))
        }
        "notify" => (vec![style::dim(text("message"))], None),
        _ => (Vec::new(), None),
    }
}

/// The answer a typed line gives, as rpc's `extension_ui_response` spells it.
pub fn response(dialog: &Dialog, line: &str) -> Value {
    let line = line.trim();
    match dialog.method.as_str() {
        "confirm" => json!({"confirmed": matches!(line.to_lowercase().as_str(), "y" | "yes")}),
        _ if line.is_empty() => json!({"cancelled": true}),
        "select" => {
            let picked = line
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| dialog.options.get(i))
                .or_else(|| dialog.options.iter().find(|o| o.as_str() == line));
            match picked {
                Some(o) => json!({"value": o}),
                None => json!({"cancelled": true}),
            }
        }
        _ => json!({"value": line}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_line_answers_the_dialog_as_rpc_would() {
        let select = Dialog {
            id: "d".into(),
            method: "select".into(),
            options: vec!["Yes".into(), "No".into()],
        };
        assert_eq!(response(&select, "2"), json!({"value": "No"}));
        assert_eq!(response(&select, "Yes"), json!({"value": "Yes"}));
        assert_eq!(response(&select, ""), json!({"cancelled": true}));
        let confirm = Dialog {
            method: "confirm".into(),
            ..select.clone()
        };
        assert_eq!(response(&confirm, "y"), json!({"confirmed": true}));
        assert_eq!(response(&confirm, "nope"), json!({"confirmed": false}));
    }
}
