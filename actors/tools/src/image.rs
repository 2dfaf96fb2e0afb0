//! Images for the `read` tool: which files count as images (pi's `utils/mime.js`, which asks
//! npm `file-type`) and how they are shrunk to fit a request (pi's `utils/image-resize.js`).
//!
//! pi resizes with Photon, a Rust library built on the `image` crate; pith calls `image`
//! directly with the same steps (Lanczos3, PNG then JPEG at falling qualities, then smaller
//! sizes), so the decisions match pi's while the encoded bytes may differ slightly.

use std::io::Cursor;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader};

/// How many leading bytes are inspected, as pi's `FILE_TYPE_SNIFF_BYTES`.
pub const SNIFF_BYTES: usize = 4100;

/// pi's limits: 2000×2000 pixels and 4.5 MB of base64.
const MAX_WIDTH: u32 = 2000;
const MAX_HEIGHT: u32 = 2000;
const MAX_BASE64_BYTES: usize = 4_718_592;
/// pi tries its default quality 80 first, then these.
const JPEG_QUALITIES: [u8; 5] = [80, 85, 70, 55, 40];

/// The MIME type of a supported image (`image/jpeg`, `image/png`, `image/gif`, `image/webp`,
/// `image/bmp`) judged from a file's first bytes as pi 1.6.0's `detectSupportedImageMimeType`
/// (`utils/mime.js`) judges them; `None` for anything else, including JPEG-LS and animated
/// PNG, which pi reads as text.
pub fn detect_mime(head: &[u8]) -> Option<&'static str> {
    const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        // FF D8 FF F7 is JPEG-LS, not a JPEG.
        return (head.get(3) != Some(&0xF7)).then_some("image/jpeg");
    }
    if head.starts_with(&PNG_SIGNATURE) {
        let is_png = head.len() >= 16 && be32(head, 8) == 13 && head.get(12..16) == Some(b"IHDR");
        return (is_png && !is_animated_png(head)).then_some("image/png");
    }
    if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        return Some("image/gif");
    }
    if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        return Some("image/webp");
    }
    if head.starts_with(b"BM") && is_bmp(head) {
        return Some("image/bmp");
    }
    None
}

/// A byte past the sniffed head reads as 0, as pi's `buffer[i] ?? 0`.
fn byte(head: &[u8], i: usize) -> u32 {
    head.get(i).copied().map_or(0, u32::from)
}

fn be32(head: &[u8], at: usize) -> u32 {
    (byte(head, at) << 24)
        | (byte(head, at + 1) << 16)
        | (byte(head, at + 2) << 8)
        | byte(head, at + 3)
}

fn le32(head: &[u8], at: usize) -> u32 {
    byte(head, at)
        | (byte(head, at + 1) << 8)
        | (byte(head, at + 2) << 16)
        | (byte(head, at + 3) << 24)
}

fn le16(head: &[u8], at: usize) -> u32 {
    byte(head, at) | (byte(head, at + 1) << 8)
}

/// pi's `isAnimatedPng`: an `acTL` chunk before the first `IDAT`; running out of sniffed bytes
/// or a chunk length pointing past them means not animated.
fn is_animated_png(head: &[u8]) -> bool {
    let mut offset = 8usize;
    while offset + 8 <= head.len() {
        let length = be32(head, offset) as usize;
        match head.get(offset + 4..offset + 8) {
            Some(b"acTL") => return true,
            Some(b"IDAT") => return false,
            _ => {}
        }
        let next = offset
            .saturating_add(8)
            .saturating_add(length)
            .saturating_add(4);
        if next <= offset || next > head.len() {
            return false;
        }
        offset = next;
    }
    false
}

/// pi's `isBmp`: a plausible file size, pixel offset, DIB header, one colour plane and a
/// standard bit depth.
fn is_bmp(head: &[u8]) -> bool {
    if head.len() < 26 {
        return false;
    }
    let (file_size, pixels, dib) = (le32(head, 2), le32(head, 10), le32(head, 14));
    if file_size != 0 && file_size < 26 {
        return false;
    }
    if u64::from(pixels) < 14 + u64::from(dib) || (file_size != 0 && pixels >= file_size) {
        return false;
    }
    let (planes, bits) = if dib == 12 {
        (le16(head, 22), le16(head, 24))
    } else if (40..=124).contains(&dib) {
        if head.len() < 30 {
            return false;
        }
        (le16(head, 26), le16(head, 28))
    } else {
        return false;
    };
    planes == 1 && [1, 4, 8, 16, 24, 32].contains(&bits)
}

/// An image ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// Base64 of the bytes to send.
    pub data: String,
    /// Their MIME type (a resized image may have become a JPEG).
    pub mime_type: String,
    /// `(width, height)` before and after, when it was resized.
    pub resized: Option<((u32, u32), (u32, u32))>,
}

/// pi 1.6.0's `processImage` (`utils/image-process.js`), the one rule for every image that
/// goes to a model: a `read` result, an `@file` argument, an image attached to a prompt, a
/// steering or follow-up message.
///
/// `mime_type` is the claimed type (parameters and case ignored; `image/jpg` is JPEG). PNG,
/// JPEG, GIF and WebP are kept; any other type is converted to PNG (pi: Photon), with the hint
/// `[Image converted from FROM to TO.]`. With `auto_resize` (pi's `images.autoResize`, on by
/// default) the image then goes through [`prepare`], which adds the dimension note when it
/// shrank the image.
pub fn process(bytes: &[u8], mime_type: &str, auto_resize: bool) -> Processed {
    let base = mime_type
        .split(';')
        .next()
        .unwrap_or(mime_type)
        .trim()
        .to_lowercase();
    let supported = match base.as_str() {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        "image/gif" => Some("image/gif"),
        "image/webp" => Some("image/webp"),
        _ => None,
    };
    let (bytes, mime, converted_from) = match supported {
        Some(m) => (std::borrow::Cow::Borrowed(bytes), m, None),
        None => match to_png(bytes) {
            Some(png) => (std::borrow::Cow::Owned(png), "image/png", Some(base)),
            None => {
                return Processed::Omitted(
                    "[Image omitted: could not be converted to a supported inline image format.]"
                        .into(),
                );
            }
        },
    };
    let conversion_hint = |to: &str| {
        converted_from
            .as_deref()
            .filter(|from| *from != to)
            .map(|from| format!("[Image converted from {from} to {to}.]"))
    };
    if !auto_resize {
        return Processed::Ok {
            hints: conversion_hint(mime).into_iter().collect(),
            data: STANDARD.encode(&bytes),
            mime_type: mime.to_owned(),
        };
    }
    match prepare(&bytes, mime) {
        None => Processed::Omitted(
            "[Image omitted: could not be resized below the inline image size limit.]".into(),
        ),
        Some(prepared) => {
            let mut hints: Vec<String> = conversion_hint(&prepared.mime_type).into_iter().collect();
            if let Some((original, shown)) = prepared.resized {
                hints.push(dimension_note(original, shown));
            }
            Processed::Ok {
                data: prepared.data,
                mime_type: prepared.mime_type,
                hints,
            }
        }
    }
}

/// [`process`] for an image that came as base64 (an rpc client's or an extension's
/// `ImageContent`), decoded as leniently as Node's `Buffer.from(data, "base64")`: characters
/// outside the alphabet are skipped, so bad data ends as an image that cannot be decoded.
pub fn process_base64(data: &str, mime_type: &str, auto_resize: bool) -> Processed {
    let clean: String = data
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_'))
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(clean.as_bytes())
        .unwrap_or_default();
    process(&bytes, mime_type, auto_resize)
}

/// What [`process`] made of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Processed {
    /// The image to send.
    Ok {
        /// Base64 of the bytes to send.
        data: String,
        /// Their MIME type.
        mime_type: String,
        /// Notes for the model about what was done (conversion, resize), in pi's order.
        hints: Vec<String>,
    },
    /// Not sendable: pi's message saying why (`[Image omitted: …]`), which takes its place.
    Omitted(String),
}

/// pi's `convertImageBytesToPng`: decode (any format `image` reads), apply the EXIF
/// orientation, encode as PNG; `None` when it cannot be decoded.
fn to_png(bytes: &[u8]) -> Option<Vec<u8>> {
    let image = decode(bytes)?;
    let mut png = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .ok()?;
    Some(png)
}

fn decode(bytes: &[u8]) -> Option<DynamicImage> {
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?;
    let mut decoder = reader.into_decoder().ok()?;
    let orientation = decoder.orientation().ok();
    let mut image = DynamicImage::from_decoder(decoder).ok()?;
    if let Some(o) = orientation {
        image.apply_orientation(o);
    }
    Some(image)
}

/// pi's `resizeImage`: the image as it is when it is within 2000×2000 and under 4.5 MB of
/// base64; else the first encoding under 4.5 MB of: PNG, JPEG at qualities 80/85/70/55/40, at
/// the size that fits 2000×2000 and then at 75 % steps. `None` when the image cannot be
/// decoded or no size fits (pi then omits it). `mime_type` is a type providers take (BMP
/// goes through [`process`], which converts it first).
pub fn prepare(bytes: &[u8], mime_type: &str) -> Option<Prepared> {
    let original = STANDARD.encode(bytes);
    let image = decode(bytes)?;
    let (width, height) = (image.width(), image.height());
    if width <= MAX_WIDTH && height <= MAX_HEIGHT && original.len() < MAX_BASE64_BYTES {
        return Some(Prepared {
            data: original,
            mime_type: mime_type.to_owned(),
            resized: None,
        });
    }
    let (mut w, mut h) = (width, height);
    if w > MAX_WIDTH {
        h = round_div(u64::from(h) * u64::from(MAX_WIDTH), w);
        w = MAX_WIDTH;
    }
    if h > MAX_HEIGHT {
        w = round_div(u64::from(w) * u64::from(MAX_HEIGHT), h);
        h = MAX_HEIGHT;
    }
    loop {
        if let Some((data, mime)) = first_fitting(&image, w.max(1), h.max(1)) {
            return Some(Prepared {
                data,
                mime_type: mime.to_owned(),
                resized: Some(((width, height), (w, h))),
            });
        }
        if w == 1 && h == 1 {
            return None;
        }
        let next_w = if w == 1 { 1 } else { (w * 3 / 4).max(1) };
        let next_h = if h == 1 { 1 } else { (h * 3 / 4).max(1) };
        if (next_w, next_h) == (w, h) {
            return None;
        }
        (w, h) = (next_w, next_h);
    }
}

/// `Math.round(n / d)` for positive values.
fn round_div(n: u64, d: u32) -> u32 {
    let d = u64::from(d.max(1));
    u32::try_from((2 * n + d) / (2 * d)).unwrap_or(u32::MAX)
}

fn first_fitting(image: &DynamicImage, w: u32, h: u32) -> Option<(String, &'static str)> {
    let resized =
        DynamicImage::ImageRgba8(image.resize_exact(w, h, FilterType::Lanczos3).to_rgba8());
    let mut png = Vec::new();
    if resized
        .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
        .is_ok()
    {
        let data = STANDARD.encode(&png);
        if data.len() < MAX_BASE64_BYTES {
            return Some((data, "image/png"));
        }
    }
    let rgb = resized.to_rgb8();
    for quality in JPEG_QUALITIES {
        let mut jpeg = Vec::new();
        if JpegEncoder::new_with_quality(&mut jpeg, quality)
            .encode_image(&rgb)
            .is_ok()
        {
            let data = STANDARD.encode(&jpeg);
            if data.len() < MAX_BASE64_BYTES {
                return Some((data, "image/jpeg"));
            }
        }
    }
    None
}

/// pi's `formatDimensionNote` for a resized image.
pub fn dimension_note(original: (u32, u32), shown: (u32, u32)) -> String {
    let scale = f64::from(original.0) / f64::from(shown.0.max(1));
    format!(
        "[Image: original {}x{}, displayed at {}x{}. Multiply coordinates by {scale:.2} to map to original image.]",
        original.0, original.1, shown.0, shown.1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_like_pi() {
        assert_eq!(detect_mime(b"GIF89a..."), Some("image/gif"));
        assert_eq!(detect_mime(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(detect_mime(&[0xFF, 0xD8, 0xFF, 0xF7]), None);
        assert_eq!(detect_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(detect_mime(b"hello"), None);
        let mut apng = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        apng.extend_from_slice(&[0; 17]);
        apng.extend_from_slice(b"\0\0\0\x08acTL");
        apng.extend_from_slice(&[0; 12]);
        assert_eq!(detect_mime(&apng), None);
        // A 1×1 24-bit BMP (40-byte DIB header): detected, and sent as PNG.
        let mut bmp = b"BM".to_vec();
        bmp.extend_from_slice(&58u32.to_le_bytes());
        bmp.extend_from_slice(&[0; 4]);
        bmp.extend_from_slice(&54u32.to_le_bytes());
        bmp.extend_from_slice(&40u32.to_le_bytes());
        bmp.extend_from_slice(&1i32.to_le_bytes());
        bmp.extend_from_slice(&1i32.to_le_bytes());
        bmp.extend_from_slice(&1u16.to_le_bytes());
        bmp.extend_from_slice(&24u16.to_le_bytes());
        bmp.extend_from_slice(&[0; 24]);
        bmp.extend_from_slice(&[0, 0, 255, 0]);
        assert_eq!(detect_mime(&bmp), Some("image/bmp"));
        let Processed::Ok {
            data,
            mime_type,
            hints,
        } = process(&bmp, "image/bmp", true)
        else {
            panic!("a decodable BMP")
        };
        assert_eq!(mime_type, "image/png");
        assert_eq!(hints, ["[Image converted from image/bmp to image/png.]"]);
        assert_eq!(
            detect_mime(&STANDARD.decode(data).unwrap()),
            Some("image/png")
        );
        bmp[28] = 3; // no such bit depth
        assert_eq!(detect_mime(&bmp), None);
    }
}
