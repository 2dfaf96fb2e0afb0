//! Reading a message for a listing: only `content` text and `timestamp`, decoded without
//! building the rest of the message (tool calls and thinking blocks are skipped).

use serde_json::Value;

use crate::scan;

/// The two members of a message a listing needs, decoded without building the rest (tool
/// calls and thinking blocks are skipped, not parsed into values).
/// `TEXT = false` skips decoding `content` (only its presence counts).
#[derive(Default)]
pub(crate) struct MessageView<const TEXT: bool> {
    /// `content`, when the member exists.
    pub(crate) content: Option<ContentView>,
    /// `timestamp`, when it is a number.
    pub(crate) timestamp: Option<f64>,
}

/// `content` as `extractTextContent` sees it.
pub(crate) enum ContentView {
    Text(String),
    Blocks(Vec<String>),
    /// Content pi would crash on (an object, null, a number): no text.
    Other,
}

impl ContentView {
    /// String content as is; the `text` of `type:"text"` blocks joined by `" "`.
    pub(crate) fn text(self) -> String {
        match self {
            ContentView::Text(s) => s,
            ContentView::Blocks(texts) => texts.join(" "),
            ContentView::Other => String::new(),
        }
    }
}

impl<const TEXT: bool> MessageView<TEXT> {
    pub(crate) fn read(raw: &str) -> Option<MessageView<TEXT>> {
        let text = scan::without_lone_surrogates(raw);
        let mut de = serde_json::Deserializer::from_str(&text);
        de.disable_recursion_limit();
        match serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut de)) {
            Ok(view) => Some(view),
            // Numbers beyond f64's range: read them as JSON.parse would (Infinity → null).
            Err(_) => {
                let fixed = scan::js_compatible(&text);
                let mut de = serde_json::Deserializer::from_str(&fixed);
                de.disable_recursion_limit();
                serde::Deserialize::deserialize(serde_stacker::Deserializer::new(&mut de)).ok()
            }
        }
    }
}

impl<'de, const TEXT: bool> serde::Deserialize<'de> for MessageView<TEXT> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const TEXT: bool>;
        impl<'de, const TEXT: bool> serde::de::Visitor<'de> for V<TEXT> {
            type Value = MessageView<TEXT>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a message object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<MessageView<TEXT>, A::Error> {
                let mut view = MessageView::default();
                // Repeated keys: the last one wins, as in JSON.parse.
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "content" if TEXT => view.content = Some(map.next_value::<ContentView>()?),
                        "content" => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            view.content = Some(ContentView::Other);
                        }
                        "timestamp" => view.timestamp = map.next_value::<JsNumber>()?.0,
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(view)
            }
        }
        d.deserialize_map(V::<TEXT>)
    }
}

impl<'de> serde::Deserialize<'de> for ContentView {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ContentView;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("message content")
            }
            fn visit_str<E>(self, s: &str) -> Result<ContentView, E> {
                Ok(ContentView::Text(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<ContentView, E> {
                Ok(ContentView::Text(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ContentView, A::Error> {
                let mut texts = Vec::new();
                while let Some(block) = seq.next_element::<BlockText>()? {
                    if let Some(t) = block.0 {
                        texts.push(t);
                    }
                }
                Ok(ContentView::Blocks(texts))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ContentView, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(ContentView::Other)
            }
            fn visit_unit<E>(self) -> Result<ContentView, E> {
                Ok(ContentView::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<ContentView, E> {
                Ok(ContentView::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<ContentView, E> {
                Ok(ContentView::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<ContentView, E> {
                Ok(ContentView::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<ContentView, E> {
                Ok(ContentView::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// One content block: its text when `type` is `"text"` (a missing or null `text` joins as
/// `""`, a non-string one as its JSON); `None` for any other block.
struct BlockText(Option<String>);

impl<'de> serde::Deserialize<'de> for BlockText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = BlockText;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<BlockText, A::Error> {
                // Only `type` and `text` are read; thinking and tool-call payloads are skipped.
                let (mut is_text, mut text) = (false, None::<Value>);
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "type" => is_text = map.next_value::<Value>()?.as_str() == Some("text"),
                        "text" => text = Some(map.next_value::<Value>()?),
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(BlockText(is_text.then(|| match text {
                    Some(Value::String(s)) => s,
                    None | Some(Value::Null) => String::new(),
                    Some(other) => pith_events::js::to_js_json(&other).unwrap_or_default(),
                })))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<BlockText, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(BlockText(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<BlockText, E> {
                Ok(BlockText(None))
            }
            fn visit_unit<E>(self) -> Result<BlockText, E> {
                Ok(BlockText(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<BlockText, E> {
                Ok(BlockText(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<BlockText, E> {
                Ok(BlockText(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<BlockText, E> {
                Ok(BlockText(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<BlockText, E> {
                Ok(BlockText(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A value that counts only when it is a number (`typeof x === "number"`).
struct JsNumber(Option<f64>);

impl<'de> serde::Deserialize<'de> for JsNumber {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(JsNumber(
            <Value as serde::Deserialize>::deserialize(d)?.as_f64(),
        ))
    }
}
