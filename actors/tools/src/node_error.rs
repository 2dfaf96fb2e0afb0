//! File-system errors worded as Node (libuv) words them, because pi passes a thrown
//! `fs` error's message to the model unchanged (e.g. `ENOENT: no such file or directory,
//! access '/x'`).

use std::io;
use std::path::Path;

use rustix::io::Errno;

/// The libuv code and description of `err`, e.g. `("ENOENT", "no such file or directory")`;
/// `None` for errors without an errno this table knows.
pub fn code_and_description(err: &io::Error) -> Option<(&'static str, &'static str)> {
    let errno = Errno::from_io_error(err)?;
    let known = [
        (Errno::ACCESS, "EACCES", "permission denied"),
        (Errno::BUSY, "EBUSY", "resource busy or locked"),
        (Errno::EXIST, "EEXIST", "file already exists"),
        (Errno::FBIG, "EFBIG", "file too large"),
        (Errno::INVAL, "EINVAL", "invalid argument"),
        (Errno::IO, "EIO", "i/o error"),
        (Errno::ISDIR, "EISDIR", "illegal operation on a directory"),
        (Errno::LOOP, "ELOOP", "too many symbolic links encountered"),
        (Errno::MFILE, "EMFILE", "too many open files"),
        (Errno::NAMETOOLONG, "ENAMETOOLONG", "name too long"),
        (Errno::NFILE, "ENFILE", "file table overflow"),
        (Errno::NOENT, "ENOENT", "no such file or directory"),
        (Errno::NOSPC, "ENOSPC", "no space left on device"),
        (Errno::NOTDIR, "ENOTDIR", "not a directory"),
        (Errno::NOTEMPTY, "ENOTEMPTY", "directory not empty"),
        (Errno::PERM, "EPERM", "operation not permitted"),
        (Errno::ROFS, "EROFS", "read-only file system"),
        (Errno::TXTBSY, "ETXTBSY", "text file is busy"),
        (Errno::XDEV, "EXDEV", "cross-device link not permitted"),
        (Errno::DQUOT, "EDQUOT", "disk quota exceeded"),
    ];
    known
        .into_iter()
        .find(|(e, _, _)| *e == errno)
        .map(|(_, code, description)| (code, description))
}

/// Node's message for a failed `syscall` on `path`: `CODE: description, syscall 'path'`, or
/// without the path part for calls on an open file (`read`, `write`). Unknown errors keep
/// Rust's wording.
pub fn message(err: &io::Error, syscall: &str, path: Option<&Path>) -> String {
    let Some((code, description)) = code_and_description(err) else {
        return err.to_string();
    };
    match path {
        Some(p) => format!("{code}: {description}, {syscall} '{}'", p.display()),
        None => format!("{code}: {description}, {syscall}"),
    }
}
