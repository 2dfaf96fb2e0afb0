//! Link settings that keep the release `pith` small in memory (issue 16: idle memory at least
//! 10× below pi's). Debug and test builds are linked as cargo does by default.
//!
//! - `startup-code.order` (made by `scripts/order-startup-code`) lists the functions a short
//!   session runs; the linker places them side by side, so the pages the kernel maps around
//!   them (64 KiB per fault) hold code that runs instead of code that never does: ~3 MB of
//!   code resident at idle instead of ~10 MB. Names the binary no longer has are skipped.
//! - `-z pack-relative-relocs` stores the ~52,000 pointer relocations of a position-
//!   independent binary in a few KiB instead of 1.25 MB that the loader reads at every start.
//!   Only where glibc is 2.36 or newer, which the packed form needs.
//!
//! Both need LLD, the default linker of Rust on x86_64 Linux; `PITH_PLAIN_LINK=1` turns them
//! off for another linker.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=startup-code.order");
    println!("cargo:rerun-if-env-changed=PITH_PLAIN_LINK");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    if env("PROFILE") != "release"
        || env("TARGET") != "x86_64-unknown-linux-gnu"
        || env("PITH_PLAIN_LINK") == "1"
    {
        return;
    }
    let order = Path::new(&env("CARGO_MANIFEST_DIR")).join("startup-code.order");
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    if glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the build machine's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36") is at least
/// `major.minor`; false when that cannot be told.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}
