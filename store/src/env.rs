//! Seams for time and ids, so tests and replays can be deterministic.

use std::sync::atomic::{AtomicU64, Ordering};

pub use pith_events::clock::{Clock, SteppingClock, SystemClock};

/// Where new ids come from (spec: format.md §4).
pub trait IdSource: Send + Sync {
    /// A candidate entry id: pi uses the first 8 hex digits of a random v4 UUID.
    fn entry_id(&self) -> String;
    /// A full random v4 UUID, pi's fallback after 100 colliding entry ids.
    fn long_id(&self) -> String;
    /// A session id: a lowercase hyphenated UUIDv7.
    fn session_id(&self) -> String;
}

/// Random ids as pi draws them.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdSource for RandomIds {
    fn entry_id(&self) -> String {
        // Never cut from a v7: its prefix is a timestamp that repeats for ~65 s.
        let mut s = uuid::Uuid::new_v4().simple().to_string();
        s.truncate(8);
        s
    }

    fn long_id(&self) -> String {
        uuid::Uuid::new_v4().hyphenated().to_string()
    }

    fn session_id(&self) -> String {
        uuid::Uuid::now_v7().hyphenated().to_string()
    }
}

/// Counting ids for tests: `00000001`, `00000002`, … and matching session ids.
#[derive(Debug, Default)]
pub struct SequentialIds {
    next: AtomicU64,
}

impl SequentialIds {
    fn bump(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }
}

impl IdSource for SequentialIds {
    fn entry_id(&self) -> String {
        format!("{:08x}", self.bump())
    }

    fn long_id(&self) -> String {
        format!("00000000-0000-4000-8000-{:012x}", self.bump())
    }

    fn session_id(&self) -> String {
        format!("00000000-0000-7000-8000-{:012x}", self.bump())
    }
}

/// ISO-8601 UTC with milliseconds, as JavaScript's `toISOString` writes it
/// (`2026-11-30T09:32:43.732Z`); `None` outside JavaScript's date range.
pub fn iso_from_ms(ms: i64) -> Option<String> {
    // Years 0..=9999 only: JavaScript writes others as ±YYYYYY, which no session holds.
    if !(-62_167_219_200_000..=253_402_300_799_999).contains(&ms) {
        return None;
    }
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, min, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    // Hand-formatted: this runs on every append.
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{milli:03}Z"
    ))
}

/// (year, month, day) of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_matches_jiff_over_a_wide_range() {
        for ms in [
            0i64,
            951_782_400_000,
            4_107_542_399_999,
            -62_135_596_800_000,
            253_402_207_200_000,
        ] {
            let want = jiff::Timestamp::from_millisecond(ms)
                .expect("in range")
                .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string();
            assert_eq!(iso_from_ms(ms).as_deref(), Some(want.as_str()), "{ms}");
        }
        let mut ms = -5_000_000_000_000i64;
        while ms < 5_000_000_000_000 {
            let want = jiff::Timestamp::from_millisecond(ms)
                .expect("in range")
                .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string();
            assert_eq!(iso_from_ms(ms).as_deref(), Some(want.as_str()));
            ms += 7_777_777_777;
        }
    }

    #[test]
    fn iso_keeps_trailing_zero_millis() {
        assert_eq!(
            iso_from_ms(1735689600000).as_deref(),
            Some("2025-01-01T00:00:00.000Z")
        );
        assert_eq!(
            iso_from_ms(1796031163732).as_deref(),
            Some("2026-11-30T09:32:43.732Z")
        );
        assert_eq!(iso_from_ms(-1).as_deref(), Some("1969-12-31T23:59:59.999Z"));
    }

    #[test]
    fn random_ids_have_pi_shapes() {
        let ids = RandomIds;
        let e = ids.entry_id();
        assert_eq!(e.len(), 8);
        assert!(
            e.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        let s = ids.session_id();
        assert_eq!(s.len(), 36);
        assert_eq!(&s[14..15], "7");
    }
}

/// What a session needs from its surroundings: where the agent directory is, the clock and
/// the id source. Cheap to clone.
#[derive(Clone)]
pub struct SessionEnv {
    /// The agent directory (`~/.pith/agent`); session directories live under its `sessions`.
    pub agent_dir: std::path::PathBuf,
    /// Wall clock for header and entry timestamps.
    pub clock: std::sync::Arc<dyn Clock>,
    /// Source of entry and session ids.
    pub ids: std::sync::Arc<dyn IdSource>,
}

impl SessionEnv {
    /// The real clock, random ids and [`crate::dirs::agent_dir`].
    pub fn system() -> SessionEnv {
        SessionEnv {
            agent_dir: crate::dirs::agent_dir(),
            clock: std::sync::Arc::new(SystemClock),
            ids: std::sync::Arc::new(RandomIds),
        }
    }

    /// `now` as an ISO timestamp (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
    pub fn now_iso(&self) -> String {
        iso_from_ms(self.clock.now_ms()).unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
    }
}

impl std::fmt::Debug for SessionEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEnv")
            .field("agent_dir", &self.agent_dir)
            .finish_non_exhaustive()
    }
}
