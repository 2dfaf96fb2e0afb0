//! Markdown of user and assistant text to HTML, with pi's export rules: raw HTML in a
//! message is shown as text (pi's `marked` config drops its html tokenizer), a line break is
//! a line break (`breaks: true`), `javascript:`, `vbscript:` and `data:` links are dropped.
//! Unlike pi, a markdown image becomes a link to its address: the page must load nothing from
//! the network.

use std::io::{self, Write};

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// Writes `text` rendered as markdown.
///
/// Errors: those of `out`.
pub fn write_markdown(out: &mut dyn Write, text: &str) -> io::Result<()> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM;
    let mut links = LinkStack::default();
    let events = Parser::new_ext(text, options).flat_map(move |e| links.rewrite(e));
    html::write_html_io(out, events)
}

/// Whether a link target may be followed: pi's export refuses these schemes (its `link` and
/// `image` renderers), which could run code or smuggle a document into the page.
fn safe_url(url: &str) -> bool {
    // Browsers ignore ASCII whitespace and controls inside a scheme ("java\tscript:").
    let scheme: String = url
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_ascii_control())
        .take(11)
        .collect::<String>()
        .to_ascii_lowercase();
    !["javascript:", "vbscript:", "data:"]
        .iter()
        .any(|s| scheme.starts_with(s))
}

/// Remembers, for each open link or image, whether its start tag was dropped, so that its end
/// tag is dropped too.
#[derive(Default)]
struct LinkStack {
    dropped: Vec<bool>,
}

impl LinkStack {
    fn rewrite<'a>(&mut self, event: Event<'a>) -> Rewritten<'a> {
        match event {
            Event::Html(h) | Event::InlineHtml(h) => Rewritten::text_lines(h),
            Event::Start(Tag::HtmlBlock) => Rewritten::one(Event::Start(Tag::Paragraph)),
            Event::End(TagEnd::HtmlBlock) => Rewritten::one(Event::End(TagEnd::Paragraph)),
            Event::SoftBreak => Rewritten::one(Event::HardBreak),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => self.open(link_type, dest_url, title, id),
            Event::End(TagEnd::Link | TagEnd::Image) => {
                if self.dropped.pop().unwrap_or(false) {
                    Rewritten::none()
                } else {
                    Rewritten::one(Event::End(TagEnd::Link))
                }
            }
            other => Rewritten::one(other),
        }
    }

    fn open<'a>(
        &mut self,
        link_type: LinkType,
        dest_url: CowStr<'a>,
        title: CowStr<'a>,
        id: CowStr<'a>,
    ) -> Rewritten<'a> {
        let safe = safe_url(&dest_url);
        self.dropped.push(!safe);
        if !safe {
            return Rewritten::none();
        }
        Rewritten::one(Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }))
    }
}

/// Zero, one or a few events in place of one (an HTML block becomes text and line breaks).
enum Rewritten<'a> {
    One(Option<Event<'a>>),
    Many(std::vec::IntoIter<Event<'a>>),
}

impl<'a> Rewritten<'a> {
    fn none() -> Self {
        Rewritten::One(None)
    }

    fn one(e: Event<'a>) -> Self {
        Rewritten::One(Some(e))
    }

    /// Raw HTML shown as the text it is, its line breaks kept.
    fn text_lines(h: CowStr<'a>) -> Self {
        if !h.contains('\n') {
            return Rewritten::one(Event::Text(h));
        }
        let mut events = Vec::new();
        for (k, line) in h.split('\n').enumerate() {
            if k > 0 {
                events.push(Event::HardBreak);
            }
            if !line.is_empty() {
                events.push(Event::Text(CowStr::from(line.to_owned())));
            }
        }
        Rewritten::Many(events.into_iter())
    }
}

impl<'a> Iterator for Rewritten<'a> {
    type Item = Event<'a>;

    fn next(&mut self) -> Option<Event<'a>> {
        match self {
            Rewritten::One(e) => e.take(),
            Rewritten::Many(events) => events.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> String {
        let mut out = Vec::new();
        write_markdown(&mut out, text).unwrap_or_default();
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn raw_html_is_text() {
        let html = md("hi </script><script>alert(1)</script>\n\n<div onclick=x>\nblock\n</div>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<div"), "{html}");
        assert!(
            html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"),
            "{html}"
        );
        assert!(
            html.contains("&lt;div onclick=x&gt;<br />\nblock<br />\n&lt;/div&gt;"),
            "{html}"
        );
    }

    #[test]
    fn dangerous_links_lose_their_target_and_images_become_links() {
        let html = md(
            "[a](javascript:alert(1)) [b](https://x.test/) ![c](https://x.test/i.png) [d](java\tscript:x)",
        );
        assert!(!html.contains("javascript"), "{html}");
        assert!(
            html.contains(r#"<a href="https://x.test/">b</a>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<a href="https://x.test/i.png">c</a>"#),
            "{html}"
        );
        assert!(!html.contains("<img"), "{html}");
    }

    #[test]
    fn soft_breaks_are_line_breaks() {
        assert_eq!(md("a\nb"), "<p>a<br />\nb</p>\n");
    }
}
