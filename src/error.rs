//! The errors of the library: each says what went wrong, with which file, and where it
//! can, what to do next. One cause chain: [`Error::Context`] wraps an error with what
//! was being done; [`std::error::Error::source`] walks down to the first cause. Each
//! error's message leaves its source out (the chain prints each cause once);
//! [`Error::one_line`] prints the whole chain.

use std::path::PathBuf;

/// Everything that can go wrong in the library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A level that a query, build or reader needs is not in the database folder.
    #[error(
        "level {seeds} ({rules}, {pits} pits per side) is not built in {dir}; run `{command}`"
    )]
    MissingLevel {
        /// The missing level.
        seeds: usize,
        /// The rule set's name (`awari`, `oware`).
        rules: &'static str,
        /// Pits per side.
        pits: usize,
        /// The database folder (`<root>/<rules>-<P>`).
        dir: PathBuf,
        /// The `awari build` command that builds it.
        command: String,
    },
    /// A file exists but is not what it should be: damaged, truncated, unfinished, of
    /// another database or of another format.
    #[error("{}: {problem}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// Reading or writing a file failed: the file here, what the OS said as the source.
    #[error("{}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// zstd failed to compress or decompress a block of a packed level (what zstd said
    /// is the source).
    #[error("{}: zstd", path.display())]
    Compression {
        /// The packed level.
        path: PathBuf,
        /// What zstd said.
        #[source]
        source: std::io::Error,
    },
    /// Another process holds the database folder (it is building or packing there).
    #[error("{} is in use by another process ({holder}); wait for it to finish, or stop it", dir.display())]
    Busy {
        /// The database folder.
        dir: PathBuf,
        /// Who holds it, as it said when it took it.
        holder: String,
    },
    /// A level needs more memory or disk than the machine has.
    #[error("{0}")]
    Resources(String),
    /// A position, request or argument the caller gave is not valid.
    #[error("{0}")]
    Input(String),
    /// An error met while doing something that the error alone does not say.
    #[error("{context}")]
    Context {
        /// What was being done, and why it needed what failed.
        context: String,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A file that is not what it should be.
    pub fn format(path: impl Into<PathBuf>, problem: impl Into<String>) -> Error {
        Error::Format {
            path: path.into(),
            problem: problem.into(),
        }
    }

    /// This error, with what was being done when it happened.
    pub fn context(self, context: impl Into<String>) -> Error {
        Error::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The first cause: the error under every [`Error::Context`].
    pub fn root(&self) -> &Error {
        match self {
            Error::Context { source, .. } => source.root(),
            e => e,
        }
    }

    /// What is wrong, for a report that names the file already: a format error's problem
    /// alone, any other error in one line.
    pub fn into_problem(self) -> String {
        match self {
            Error::Format { problem, .. } => problem,
            e => e.one_line(),
        }
    }

    /// The whole chain in one line: each context, then the first cause and what the
    /// system said of it.
    pub fn one_line(&self) -> String {
        let mut line = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            line += ": ";
            line += &c.to_string();
            cause = c.source();
        }
        line
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_cause() {
        let e = Error::io("a/b", std::io::Error::other("boom")).context("reading level 3");
        assert_eq!(e.to_string(), "reading level 3");
        assert_eq!(e.one_line(), "reading level 3: a/b: boom");
        assert!(matches!(e.root(), Error::Io { .. }));
        // Each cause once down the chain.
        let source = std::error::Error::source(&e).expect("a source");
        assert_eq!(source.to_string(), "a/b");
        let os = source.source().expect("the OS's word");
        assert_eq!(os.to_string(), "boom");
        assert!(os.source().is_none());
    }
}
