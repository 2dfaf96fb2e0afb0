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

/// The MIME type of a supported image (`image/png`, `image/jpeg`, `image/gif`, `image/webp`)
/// judged from a file's first bytes as `file-type` judges them; `None` for anything else,
/// including animated PNG (`image/apng`), which pi reads as text.
pub fn detect_mime(head: &[u8]) -> Option<&'static str> {
    // file-type looks past one UTF-8 BOM.
    let head = head.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(head);
    if head.starts_with(b"GIF") {
        return Some("image/gif");
    }
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        // FF D8 FF F7 is JPEG-LS, not a JPEG.
        return (head.get(3) != Some(&0xF7)).then_some("image/jpeg");
    }
    if head.starts_with(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]) {
        return png_kind(head);
    }
    if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        return Some("image/webp");
    }
    None
}

/// Walks PNG chunks as file-type does: `acTL` before the first `IDAT` means APNG; running
/// out of sniffed bytes means PNG; a first chunk that is not a 13-byte `IHDR` means neither.
fn png_kind(head: &[u8]) -> Option<&'static str> {
    let mut pos = 8usize;
    let mut seen_header = false;
    for _ in 0..512 {
        if pos + 8 > head.len() {
            return Some("image/png");
        }
        let length = i32::from_be_bytes([head[pos], head[pos + 1], head[pos + 2], head[pos + 3]]);
        let kind = &head[pos + 4..pos + 8];
        if length < 0 {
            return None;
        }
        if kind == b"IHDR" {
            if length != 13 {
                return None;
            }
            seen_header = true;
        }
        match kind {
            b"IDAT" => return Some("image/png"),
            b"acTL" => return None,
            _ if !seen_header && kind != b"CgBI" => return None,
            _ => {}
        }
        pos += 8 + length as usize + 4;
        if pos + 8 >= head.len() {
            return Some("image/png");
        }
    }
    Some("image/png")
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

/// pi's `resizeImage`: the image as it is when it is within 2000×2000 and under 4.5 MB of
/// base64; else the first encoding under 4.5 MB of: PNG, JPEG at qualities 80/85/70/55/40, at
/// the size that fits 2000×2000 and then at 75 % steps. `None` when the image cannot be
/// decoded or no size fits (pi then omits it).
pub fn prepare(bytes: &[u8], mime_type: &str) -> Option<Prepared> {
    let original = STANDARD.encode(bytes);
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?;
    let mut decoder = reader.into_decoder().ok()?;
    let orientation = decoder.orientation().ok();
    let mut image = DynamicImage::from_decoder(decoder).ok()?;
    if let Some(o) = orientation {
        image.apply_orientation(o);
    }
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
    fn sniffs_like_file_type() {
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
    }
}
