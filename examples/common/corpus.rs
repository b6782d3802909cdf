//! The files of a corpus directory, for the examples that read `../shared/corpus` (each example
//! includes this file with `#[path]`; Cargo builds only `examples/*.rs` as examples).

use std::path::{Path, PathBuf};

/// Every regular file under `dir` whose path passes `keep`, sorted by path, so that a run reads
/// the corpus in the same order on every machine.
pub fn files(dir: &Path, keep: impl Fn(&Path) -> bool) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(entry.path());
            } else if kind.is_file() && keep(&entry.path()) {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Whether `path` names a gemtext file by its extension (`.gmi`, or also `.gemini` when
/// `long_too`).
#[allow(dead_code)] // Not every example that includes this file asks.
pub fn is_gemtext(path: &Path, long_too: bool) -> bool {
    path.extension()
        .is_some_and(|e| e == "gmi" || (long_too && e == "gemini"))
}
