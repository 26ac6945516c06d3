//! The databases that `awari serve` serves: each one opened, what its folder holds, and
//! the start positions it answers. Apart from `mod.rs`, which serves them, so that the
//! routes (`api.rs`) use them without using `mod.rs`, which uses the routes.

use crate::app::database::Database;
use crate::db::layout::{database_dirs, list_levels, present_levels};
use crate::error::{Error, Result};
use crate::game::index::Index;
use crate::game::rules::Rules;

/// One database served: a rule set and board size, and what its folder holds.
#[derive(Debug)]
pub struct Served {
    /// The open database.
    pub db: Database,
    /// The highest level `m` such that every level `0..=m` has a file; `None` if level 0
    /// has none (the database answers nothing then, but is listed).
    pub max_seeds: Option<usize>,
    /// Of the levels `0..=max_seeds`: how many are read from raw files.
    pub raw: usize,
    /// Of the levels `0..=max_seeds`: how many are read from packed files.
    pub packed: usize,
    /// Positions stored in the levels `0..=max_seeds`.
    pub positions: u64,
}

impl Served {
    fn open(root: &std::path::Path, rules: Rules, pits: usize) -> Result<Served> {
        let db = Database::open(root, rules, pits)?;
        let max_seeds = present_levels(db.dir()).filter(|&m| m <= db.index().max_seeds());
        let files = list_levels(db.dir())?;
        let (mut raw, mut packed, mut positions) = (0, 0, 0);
        for n in max_seeds.map_or(0..0, |m| 0..m + 1) {
            // The raw file is read when both are present (LevelFile::open).
            if files.contains(&(n, false)) {
                raw += 1;
            } else {
                packed += 1;
            }
            positions += db.index().level_size(n);
        }
        Ok(Served {
            db,
            max_seeds,
            raw,
            packed,
            positions,
        })
    }

    /// `<rules>-<P>`, the folder's name.
    pub fn name(&self) -> String {
        format!("{}-{}", self.db.rules().name(), self.db.pits())
    }

    /// What the database answers, in words: "levels 0..=16 (raw)".
    pub fn summary(&self) -> String {
        match self.max_seeds {
            None => "no levels".into(),
            Some(m) => {
                let files = match (self.raw, self.packed) {
                    (_, 0) => "raw".to_string(),
                    (0, _) => "packed".to_string(),
                    (r, p) => format!("{r} raw, {p} packed"),
                };
                format!("levels 0..={m} ({files})")
            }
        }
    }
}

/// Every database under `root`, opened (levels are opened on their first probe).
pub fn open_all(root: &std::path::Path) -> Result<Vec<Served>> {
    let dirs = database_dirs(root).map_err(|e| e.context("no databases to serve"))?;
    if dirs.is_empty() {
        return Err(Error::Input(format!(
            "no database under {}: build one first, e.g. `awari build --max-seeds 16 --dir {}`",
            root.display(),
            root.display()
        )));
    }
    dirs.into_iter()
        .map(|(rules, pits, _)| Served::open(root, rules, pits))
        .collect()
}

/// The start positions (k seeds in each pit) that a database of levels `0..=max` on
/// `pits` pits per side answers.
pub fn start_seeds(index: &Index, pits: usize, max: usize) -> Vec<usize> {
    (1..)
        .take_while(|k| 2 * pits * k <= max.min(index.max_seeds()))
        .collect()
}
