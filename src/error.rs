//! The errors of the library: each says what went wrong, with which file, and where it
//! can, what to do next.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A level a query or build needs is not in the database folder.
    #[error(
        "level {seeds} ({rules}, {pits} pits per side) is not built in {dir}; run `{command}`"
    )]
    MissingLevel {
        seeds: usize,
        rules: crate::Rules,
        pits: usize,
        dir: PathBuf,
        command: String,
    },
    /// A level file exists but is damaged, truncated, unfinished or of another database.
    #[error("{path}: {problem}")]
    BadLevel { path: PathBuf, problem: String },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A position or argument the user gave is not valid.
    #[error("{0}")]
    Input(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub fn bad(path: impl Into<PathBuf>, problem: impl Into<String>) -> Error {
        Error::BadLevel {
            path: path.into(),
            problem: problem.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
