//! The published table `data/variants.md`: its small rows are derived again (database
//! and independent solver) and must match the file cell for cell, seconds aside; the
//! independent solver agrees on every row where it ran.

use awari::expert::variants::{markdown_row, parse_table, solve, Row, Variant, VariantOptions};
use awari::Rules;

const TABLE: &str = include_str!("../data/variants.md");
/// Rows whose database holds at most this many positions are recomputed (well under a
/// second each).
const SMALL: u64 = 700_000;

fn positions(cell: &str) -> u64 {
    cell.replace(',', "").parse().unwrap()
}

#[test]
fn table_has_both_rule_sets_and_says_how_to_regenerate_it() {
    let rows = parse_table(TABLE);
    assert!(TABLE.contains("cargo run --release -- variants"));
    for rules in ["awari", "oware"] {
        let of: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == rules).collect();
        assert!(of.len() > 30, "{rules}: {} rows", of.len());
        for pits in 2..=6 {
            assert!(
                of.iter().any(|r| r[1] == pits.to_string()),
                "{rules} P={pits}"
            );
        }
        // Awari itself: the 889 billion positions of Romein and Bal, which `awari
        // import` reads; their files hold no other rule set or board, so no other row
        // suggests importing.
        let awari = of.iter().find(|r| r[1] == "6" && r[2] == "4").unwrap();
        assert_eq!(
            awari[5].contains("889,063,398,406") && awari[5].contains("awari import"),
            rules == "awari",
            "{awari:?}"
        );
        for r in of.iter().filter(|r| r[1] != "6") {
            assert!(!r[5].contains("import"), "{r:?}");
        }
    }
    // Every row where the independent solver ran agrees.
    let ran = rows.iter().filter(|r| r[7].starts_with("agrees")).count();
    assert!(ran > 60, "{ran}");
    for r in &rows {
        assert!(
            r[7].starts_with("agrees") || r[7].starts_with("not run") || r[7] == "-",
            "{r:?}"
        );
        assert_eq!(r[4] == "?", r[7] == "-", "{r:?}");
    }
}

/// Minutes together: left out of the quick tier (`--skip slow::`, GUIDE.md "Testing").
mod slow {
    use super::*;

    #[test]
    fn small_rows_are_derived_again() {
        let rows = parse_table(TABLE);
        let root = tempfile::tempdir().unwrap();
        let opts = VariantOptions {
            root: root.path().to_path_buf(),
            ..VariantOptions::default()
        };
        let mut checked = 0;
        let mut decided = 0;
        for cells in rows
            .iter()
            .filter(|r| r[4] != "?" && positions(&r[6]) <= SMALL)
        {
            let variant = Variant {
                rules: cells[0].parse::<Rules>().unwrap(),
                pits: cells[1].parse().unwrap(),
                per_pit: cells[2].parse().unwrap(),
            };
            let row: Row = solve(&opts, variant, true, &mut |w| panic!("{w}")).unwrap();
            let again = &parse_table(&markdown_row(&row))[0];
            // Every cell but the time.
            assert_eq!(again[..8], cells[..8], "{variant:?}");
            checked += 1;
            decided += (row.value != Some(0)) as usize;
        }
        assert!(checked >= 60, "only {checked} rows checked");
        assert!(decided >= 10, "only {decided} rows are not draws");
    }
}
