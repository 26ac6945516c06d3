//! The SVG chart of `awari stats --plot`, drawn with plotters: a CLI-only dependency, so
//! the library does not need it.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{anyhow, bail, Context};
use plotters::prelude::*;

use awari::expert::stats::{DistanceStats, LevelStats};
use awari::Rules;

/// Refuses a chart file name that does not end in `.svg` (only the SVG backend is built
/// in: it writes text as text; a bitmap would need a font renderer), or whose folder does
/// not exist: said before the levels are read, which can take minutes.
pub fn check_plot_path(path: &Path) -> anyhow::Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !ext.eq_ignore_ascii_case("svg") {
        bail!(
            "--plot {}: only SVG charts are supported; give a file name ending in .svg",
            path.display()
        );
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && dir.exists() && !dir.is_dir() => bail!(
            "--plot {}: {} is a file, not a folder",
            path.display(),
            dir.display()
        ),
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => bail!(
            "--plot {}: the folder {} does not exist",
            path.display(),
            dir.display()
        ),
        _ if path.is_dir() => bail!(
            "--plot {}: a folder; give a file name ending in .svg",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// Writes the chart of [`plot_svg`] to `path` (which must end in `.svg`).
pub fn write_plot(
    path: &Path,
    rules: Rules,
    pits: usize,
    levels: &[LevelStats],
    distances: Option<&[DistanceStats]>,
) -> anyhow::Result<()> {
    check_plot_path(path)?;
    let svg = plot_svg(rules, pits, levels, distances)?;
    fs::write(path, svg).with_context(|| path.display().to_string())
}

const WON: RGBColor = RGBColor(44, 160, 44);
const DRAWN: RGBColor = RGBColor(170, 170, 170);
const LOST: RGBColor = RGBColor(214, 39, 40);
const FONT: &str = "sans-serif";

/// The colour scale of the heat map runs over shares `10^LOG_MIN ..= 1` on a log scale:
/// the extreme values of a level are rare (a few positions in a million) but carry the
/// shape of the game, which a linear scale would hide.
const LOG_MIN: f64 = -5.0;

/// Viridis, sampled at five points: dark for rare, yellow for common; readable in grey
/// and by colour-blind readers.
fn viridis(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let t = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Position of a share (0..=1) on the colour scale.
fn share_scale(share: f64) -> f64 {
    (share.max(1e-300).log10() - LOG_MIN) / -LOG_MIN
}

/// A heat map's cell: level `x`, value or distance `y`, coloured by its `share`.
fn heat_cell(x: f64, y: f64, share: f64) -> Rectangle<(f64, f64)> {
    Rectangle::new(
        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
        viridis(share_scale(share)).filled(),
    )
}

/// Levels, values and distances are whole numbers: a tick between two (a chart of one or
/// two levels) gets no label rather than a rounded duplicate.
fn whole(x: f64) -> bool {
    (x - x.round()).abs() < 1e-9
}

/// A tick's label: the whole number, or none between two.
fn whole_label(x: &f64) -> String {
    match whole(*x) {
        true => format!("{x:.0}"),
        false => String::new(),
    }
}

/// "Awari" for `awari`.
fn title_case(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// An SVG chart of the levels, readable on its own: a title naming the rules and board;
/// top, the share of positions won, drawn and lost by the side to move per level
/// (stacked bars, with a legend); bottom, a heat map of the share of each value per level
/// (log colour scale, with its colour bar) and the mean value per level as a line; with
/// `distances`, a third panel: the heat map of the share of each distance to conversion
/// among the positions of a level with one, with the mean and the longest per level.
pub fn plot_svg(
    rules: Rules,
    pits: usize,
    levels: &[LevelStats],
    distances: Option<&[DistanceStats]>,
) -> anyhow::Result<String> {
    if levels.is_empty() {
        bail!("no levels to plot");
    }
    let mut svg = String::new();
    draw(&mut svg, rules, pits, levels, distances)
        .map_err(|e| anyhow!("drawing the chart: {e}"))?;
    Ok(svg)
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;
type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The height of the chart's third panel (the distances).
const DTC_PANEL: u32 = 560;

fn draw(
    svg: &mut String,
    rules: Rules,
    pits: usize,
    levels: &[LevelStats],
    distances: Option<&[DistanceStats]>,
) -> DrawResult {
    let extra = if distances.is_some() { DTC_PANEL } else { 0 };
    let (w, h) = (1000u32, 900u32 + extra);
    let root = SVGBackend::with_string(svg, (w, h)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "{} 2x{pits}: outcome for the side to move by seeds on the board",
        title_case(rules.name())
    );
    let root = root.titled(&title, (FONT, 26))?;
    let (upper, lower) = root.split_vertically(360);
    let (lower, third) = lower.split_vertically(lower.dim_in_pixel().1 - extra);
    let side_width = 190;
    let (bars_area, bars_side) = upper.split_horizontally(w - side_width);
    let (map_area, map_side) = lower.split_horizontally(w - side_width);

    let lo = levels.iter().map(|l| l.seeds).min().unwrap_or(0) as f64;
    let hi = levels.iter().map(|l| l.seeds).max().unwrap_or(0) as f64;
    let x_range = (lo - 0.5)..(hi + 0.5);
    let x_labels = levels.len() + 1;
    let x_desc = "level: seeds on the board";
    let level_label = whole_label;

    // Top: won / drawn / lost stacked to 100%: lost from the bottom, won from the top.
    let mut bars = ChartBuilder::on(&bars_area)
        .caption(
            "Share of the positions of each level won, drawn and lost by the side to move",
            (FONT, 17),
        )
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range.clone(), 0f64..100f64)?;
    bars.configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .x_labels(x_labels)
        .x_label_formatter(&level_label)
        .y_labels(11)
        .y_label_formatter(&|y| format!("{y:.0}%"))
        .x_desc(x_desc)
        .y_desc("positions of the level")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    for l in levels {
        let x = l.seeds as f64;
        let (lost, drawn) = (l.percent(l.lost()), l.percent(l.drawn()));
        let parts = [
            (0.0, lost, LOST),
            (lost, lost + drawn, DRAWN),
            (lost + drawn, 100.0, WON),
        ];
        for (y0, y1, colour) in parts {
            if y1 > y0 {
                bars.draw_series(std::iter::once(Rectangle::new(
                    [(x - 0.38, y0), (x + 0.38, y1)],
                    colour.filled(),
                )))?;
            }
        }
    }
    let legend_font = (FONT, 15).into_font();
    bars_side.draw(&Text::new("side to move:", (10, 60), legend_font.clone()))?;
    for (i, (name, colour)) in [("won", WON), ("drawn", DRAWN), ("lost", LOST)]
        .into_iter()
        .enumerate()
    {
        let y = 90 + 28 * i as i32;
        bars_side.draw(&Rectangle::new([(12, y), (30, y + 18)], colour.filled()))?;
        bars_side.draw(&Text::new(name, (40, y + 2), legend_font.clone()))?;
    }

    // Bottom: heat map of value by level, mean value on top.
    let top = hi.max(1.0);
    let mut map = ChartBuilder::on(&map_area)
        .caption(
            "Distribution of the value (final margin for the side to move) in each level",
            (FONT, 17),
        )
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range.clone(), (-top - 0.5)..(top + 0.5))?;
    map.configure_mesh()
        .disable_mesh()
        .x_labels(x_labels)
        .x_label_formatter(&level_label)
        .y_labels((2 * top as usize + 1).min(17))
        .y_label_formatter(&|y| match *y {
            y if !whole(y) => String::new(),
            0.0 => "0".into(),
            y => format!("{y:+.0}"),
        })
        .x_desc(x_desc)
        .y_desc("value (seeds)")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    for l in levels {
        let all = l.positions().max(1) as f64;
        let x = l.seeds as f64;
        map.draw_series(
            l.histogram()
                .filter(|&(_, c)| c > 0)
                .map(|(v, c)| heat_cell(x, v as f64, c as f64 / all)),
        )?;
    }
    let means: Vec<(f64, f64)> = levels.iter().map(|l| (l.seeds as f64, l.mean())).collect();
    let mean_style = ShapeStyle::from(&RED).stroke_width(2);
    map.draw_series(std::iter::once(PathElement::new(means.clone(), mean_style)))?;
    map.draw_series(
        means
            .iter()
            .map(|&p| Circle::new(p, 3, ShapeStyle::from(&RED).filled())),
    )?;

    // The map's legend: the mean line, then the colour bar with decades marked.
    map_side.draw(&PathElement::new(vec![(12, 60), (34, 60)], mean_style))?;
    map_side.draw(&Circle::new((23, 60), 3, ShapeStyle::from(&RED).filled()))?;
    map_side.draw(&Text::new("mean value", (42, 52), legend_font.clone()))?;
    let caption = [
        "colour: share of",
        "the level's positions",
        "at that value",
        "(log scale)",
    ];
    colour_bar(&map_side, &caption)?;
    if let Some(d) = distances {
        draw_distances(&third, side_width, d, (x_range, x_labels))?;
    }
    root.present()?;
    Ok(())
}

/// The distances panel: a heat map of the share of each distance among the positions of
/// the level with one (log colour scale), the mean and the longest per level as lines.
fn draw_distances(
    area: &Area,
    side_width: u32,
    distances: &[DistanceStats],
    (x_range, x_labels): (std::ops::Range<f64>, usize),
) -> DrawResult {
    let (map_area, side) = area.split_horizontally(area.dim_in_pixel().0 - side_width);
    let top = distances
        .iter()
        .map(|d| d.longest())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut map = ChartBuilder::on(&map_area)
        .caption(
            "Distance to conversion (plies to the next capture, both sides keeping the value)",
            (FONT, 17),
        )
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, 0.5..(top + 0.5))?;
    map.configure_mesh()
        .disable_mesh()
        .x_labels(x_labels)
        .x_label_formatter(&whole_label)
        .y_labels(14)
        .y_label_formatter(&whole_label)
        .x_desc("level: seeds on the board")
        .y_desc("distance (plies)")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    for d in distances {
        let all = d.with_distance().max(1) as f64;
        let x = d.seeds as f64;
        map.draw_series(
            d.histogram()
                .filter(|&(_, c)| c > 0)
                .map(|(y, c)| heat_cell(x, y as f64, c as f64 / all)),
        )?;
    }
    let with: Vec<&DistanceStats> = distances.iter().filter(|d| d.longest() > 0).collect();
    let mean: Vec<(f64, f64)> = with.iter().map(|d| (d.seeds as f64, d.mean())).collect();
    let longest: Vec<(f64, f64)> = with
        .iter()
        .map(|d| (d.seeds as f64, d.longest() as f64))
        .collect();
    let legend_font = (FONT, 15).into_font();
    for (i, (points, colour, name)) in [(mean, RED, "mean"), (longest, BLACK, "longest")]
        .into_iter()
        .enumerate()
    {
        let style = ShapeStyle::from(&colour).stroke_width(2);
        map.draw_series(std::iter::once(PathElement::new(points.clone(), style)))?;
        map.draw_series(
            points
                .iter()
                .map(|&p| Circle::new(p, 3, ShapeStyle::from(&colour).filled())),
        )?;
        let y = 30 + 26 * i as i32;
        side.draw(&PathElement::new(vec![(12, y), (34, y)], style))?;
        side.draw(&Circle::new((23, y), 3, ShapeStyle::from(&colour).filled()))?;
        side.draw(&Text::new(name, (42, y - 8), legend_font.clone()))?;
    }
    let caption = [
        "colour: share of the",
        "level's positions with",
        "a distance at that one",
        "(log scale)",
    ];
    colour_bar(&side, &caption)
}

/// The heat maps' legend: four lines of caption, then the colour bar with decades marked.
fn colour_bar(side: &Area, caption: &[&str; 4]) -> DrawResult {
    let legend_font = (FONT, 15).into_font();
    for (i, line) in caption.iter().enumerate() {
        side.draw(&Text::new(
            *line,
            (10, 95 + 18 * i as i32),
            legend_font.clone(),
        ))?;
    }
    let map_side = side;
    let (bar_top, bar_bottom) = (180i32, 440i32);
    let steps = 64;
    for s in 0..steps {
        let y0 = bar_bottom - (bar_bottom - bar_top) * (s + 1) / steps;
        let y1 = bar_bottom - (bar_bottom - bar_top) * s / steps;
        let t = (s as f64 + 0.5) / steps as f64;
        map_side.draw(&Rectangle::new([(12, y0), (36, y1)], viridis(t).filled()))?;
    }
    map_side.draw(&Rectangle::new(
        [(12, bar_top), (36, bar_bottom)],
        ShapeStyle::from(&BLACK),
    ))?;
    let tick_font = (FONT, 13).into_font();
    for d in 0..=(-LOG_MIN as i32) {
        let y = bar_bottom - (bar_bottom - bar_top) * d / (-LOG_MIN as i32);
        let share = 10f64.powi(LOG_MIN as i32 + d) * 100.0;
        let mut label = String::new();
        if share >= 1.0 {
            write!(label, "{share:.0}%")?;
        } else {
            write!(label, "{}%", share)?;
        }
        if d == 0 {
            label.insert_str(0, "≤ ");
        }
        map_side.draw(&PathElement::new(
            vec![(36, y), (42, y)],
            ShapeStyle::from(&BLACK),
        ))?;
        map_side.draw(&Text::new(label, (46, y - 7), tick_font.clone()))?;
    }
    map_side.draw(&Text::new(
        "blank: no position",
        (10, bar_bottom + 20),
        tick_font,
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_paths() {
        // The folder must exist: the crate's own `src` does when tests run.
        assert!(check_plot_path(Path::new("src/b.svg")).is_ok());
        assert!(check_plot_path(Path::new("b.SVG")).is_ok());
        let e = check_plot_path(Path::new("no-such-folder/b.svg"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
        let e = check_plot_path(Path::new("b.png")).unwrap_err().to_string();
        assert!(e.contains("only SVG"), "{e}");
        assert!(!e.contains('\n'));
    }
}
