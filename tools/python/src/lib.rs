//! `awari._awari`: the Python face of the awari library's `Tablebase`. The package
//! `awari` (awari/__init__.py) re-exports it with type stubs.
//!
//! Errors carry the library's one-line message (the words `awari query` prints after
//! `error: `): a missing folder is a `FileNotFoundError`; a bad position, a missing level
//! or another caller mistake a `ValueError`; a damaged file, a folder in use or a
//! machine too small an `OSError`.

use std::path::PathBuf;

use awari::expert::{list_levels, parse_counts, LINE_PLIES};
use awari::{Error, Position, Rules};
use pyo3::buffer::{Element, ElementType, PyUntypedBuffer};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyDict, PyList, PyString};
use rayon::prelude::*;

/// The Python exception of a library error, with its one-line message.
fn py_err(e: &Error) -> PyErr {
    py_err_with(e, "")
}

/// As [`py_err`], the message after `prefix` (which row of a batch).
fn py_err_with(e: &Error, prefix: &str) -> PyErr {
    let msg = format!("{prefix}{}", e.one_line());
    match e.root() {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(msg)
        }
        Error::Io { .. }
        | Error::Format { .. }
        | Error::Compression { .. }
        | Error::Busy { .. }
        | Error::Resources(_) => PyOSError::new_err(msg),
        _ => PyValueError::new_err(msg),
    }
}

/// The error of a pit count the command line would also refuse, in its words: it reads
/// each count as text.
fn bad_count(text: &str) -> Error {
    match parse_counts(&[text]) {
        Err(e) => e,
        Ok(_) => Error::Input(format!("'{text}' is not a number of seeds")),
    }
}

/// One pit count: an int (or anything with `__index__`, such as NumPy's integers).
fn count_of(item: &Bound<'_, PyAny>) -> PyResult<u32> {
    if let Ok(v) = item.extract::<u32>() {
        return Ok(v);
    }
    Err(py_err(&bad_count(&item.str()?.to_string_lossy())))
}

/// A position: a string of counts ("1 1 1 1 1 2 4 2 3 0 0 0", commas allowed) or a
/// sequence of ints, side to move first.
fn position_of(obj: &Bound<'_, PyAny>) -> PyResult<Position> {
    if let Ok(s) = obj.cast::<PyString>() {
        return s.to_str()?.parse::<Position>().map_err(|e| py_err(&e));
    }
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "a position is a list of pit counts or a string of them, not {}",
            type_name(obj)
        ))
    })?;
    let mut counts = Vec::with_capacity(16);
    for item in iter {
        counts.push(count_of(&item?)?);
    }
    Position::from_counts(&counts).map_err(|e| py_err(&e))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "this".into())
}

/// A library JSON value as Python objects (dicts, lists, ints, floats, strings, None).
fn to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => py.None().into_bound(py),
        J::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(f)) => f.into_pyobject(py)?.into_any(),
            _ => n.to_string().into_pyobject(py)?.into_any(),
        },
        J::String(s) => s.into_pyobject(py)?.into_any(),
        J::Array(a) => PyList::new(
            py,
            a.iter()
                .map(|x| to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        J::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// The value of a position for the side to move under perfect play: `str()` is the
/// library's (`margin 0, a draw`).
#[pyclass(frozen, eq, hash, module = "awari")]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Value {
    margin: i8,
}

#[pymethods]
impl Value {
    #[new]
    fn new(margin: i8) -> Value {
        Value { margin }
    }

    /// Seeds the side to move captures from now on minus the opponent's.
    #[getter]
    fn margin(&self) -> i8 {
        self.margin
    }

    /// "win", "draw" or "loss": the margin's sign.
    #[getter]
    fn outcome(&self) -> String {
        awari::Value::new(self.margin).outcome().to_string()
    }

    fn __int__(&self) -> i64 {
        self.margin as i64
    }

    fn __str__(&self) -> String {
        awari::Value::new(self.margin).to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "Value(margin={}, outcome='{}')",
            self.margin,
            self.outcome()
        )
    }
}

/// Integer element types of an array of positions.
trait Count: Element + Copy + Send + Sync {
    fn wide(self) -> i128;
}

macro_rules! count {
    ($($t:ty)*) => { $(impl Count for $t { fn wide(self) -> i128 { self as i128 } })* };
}
count!(u8 i8 u16 i16 u32 i32 u64 i64);

/// Margins, or the first bad row and its error.
type Margins = Result<Vec<i8>, (usize, Error)>;

/// The margins of `n` positions, in parallel: `f(i)` probes row `i`. The error of the
/// first bad row, if any.
fn probe_rows(n: usize, f: impl Fn(usize) -> awari::Result<i8> + Sync) -> Margins {
    const BLOCK: usize = 4096;
    let mut out = vec![0i8; n];
    let first_bad = out
        .par_chunks_mut(BLOCK)
        .enumerate()
        .filter_map(|(b, chunk)| {
            for (j, slot) in chunk.iter_mut().enumerate() {
                match f(b * BLOCK + j) {
                    Ok(v) => *slot = v,
                    Err(e) => return Some((b * BLOCK + j, e)),
                }
            }
            None
        })
        .min_by_key(|(i, _)| *i);
    match first_bad {
        Some(bad) => Err(bad),
        None => Ok(out),
    }
}

/// The databases of one rule set in a folder (every board size found); levels, raw or
/// packed, are opened and checked on first use.
#[pyclass(frozen, module = "awari")]
struct Tablebase {
    tb: awari::Tablebase,
    path: PathBuf,
}

impl Tablebase {
    /// Probes the rows of a 2-D integer array, `width` counts each.
    fn probe_flat<T: Count>(&self, counts: &[T], width: usize) -> Margins {
        probe_rows(counts.len() / width, |i| {
            let row = &counts[i * width..(i + 1) * width];
            let mut c = [0u32; 16];
            for (slot, &v) in c.iter_mut().zip(row) {
                *slot = u32::try_from(v.wide()).map_err(|_| bad_count(&v.wide().to_string()))?;
            }
            let pos = Position::from_counts(&c[..width])?;
            self.tb.probe(&pos).map(awari::Value::margin)
        })
    }

    /// The margins of a buffer of integers, shaped (positions, 2P); `None` if its
    /// elements are not integers.
    fn probe_buffer(&self, py: Python<'_>, buf: PyUntypedBuffer) -> PyResult<Option<Margins>> {
        let shape = buf.shape().to_vec();
        let [rows, width] = shape[..] else {
            return Err(PyValueError::new_err(format!(
                "positions: a 2-D array, one row of pit counts per position, not {}-D",
                shape.len()
            )));
        };
        if rows == 0 {
            return Ok(Some(Ok(Vec::new())));
        }
        if width % 2 != 0 || !(4..=16).contains(&width) {
            // The library's words, for the first row.
            let e = Position::from_counts(&vec![0; width]).unwrap_err();
            return Err(py_err_with(&e, "row 0: "));
        }
        macro_rules! typed {
            ($t:ty) => {{
                let counts: Vec<$t> = buf.into_typed::<$t>()?.to_vec(py)?;
                py.detach(|| self.probe_flat(&counts, width))
            }};
        }
        use ElementType::{SignedInteger as S, UnsignedInteger as U};
        Ok(Some(match ElementType::from_format(buf.format()) {
            U { bytes: 1 } => typed!(u8),
            S { bytes: 1 } => typed!(i8),
            U { bytes: 2 } => typed!(u16),
            S { bytes: 2 } => typed!(i16),
            U { bytes: 4 } => typed!(u32),
            S { bytes: 4 } => typed!(i32),
            U { bytes: 8 } => typed!(u64),
            S { bytes: 8 } => typed!(i64),
            _ => return Ok(None),
        }))
    }

    /// The margins of a sequence of positions (lists of ints or strings): parsed with the
    /// GIL held, probed without it.
    fn probe_sequence(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<i8>> {
        let mut positions = Vec::new();
        for (i, row) in obj.try_iter()?.enumerate() {
            let pos = position_of(&row?).map_err(|e| {
                let msg = format!("row {i}: {}", e.value(py));
                PyErr::from_type(e.get_type(py), msg)
            })?;
            positions.push(pos);
        }
        py.detach(|| {
            probe_rows(positions.len(), |i| {
                self.tb.probe(&positions[i]).map(awari::Value::margin)
            })
        })
        .map_err(|(i, e)| py_err_with(&e, &format!("row {i}: ")))
    }
}

#[pymethods]
impl Tablebase {
    /// The value of a position for the side to move.
    fn probe(&self, py: Python<'_>, position: &Bound<'_, PyAny>) -> PyResult<Value> {
        let pos = position_of(position)?;
        let v = py.detach(|| self.tb.probe(&pos)).map_err(|e| py_err(&e))?;
        Ok(Value { margin: v.margin() })
    }

    /// The value of a position and of each legal move: the object `awari query --json`
    /// prints (rules, pits, seeds, value, stored, moves, best, game_over, distance).
    fn moves<'py>(
        &self,
        py: Python<'py>,
        position: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pos = position_of(position)?;
        let v = py
            .detach(|| {
                self.tb
                    .database(pos.pits_per_side())?
                    .query_json(pos.board(), false)
            })
            .map_err(|e| py_err(&e))?;
        to_py(py, &v)
    }

    /// A principal variation of at most `max_plies` moves: `{"plies": [...], "end": ...,
    /// "score": [a, b]}`, as the "line" of `awari query --json --line`.
    #[pyo3(signature = (position, max_plies = LINE_PLIES))]
    fn line<'py>(
        &self,
        py: Python<'py>,
        position: &Bound<'py, PyAny>,
        max_plies: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pos = position_of(position)?;
        let line = py
            .detach(|| self.tb.line(&pos, max_plies))
            .map_err(|e| py_err(&e))?;
        let v = serde_json::to_value(&line).map_err(|e| PyValueError::new_err(e.to_string()))?;
        to_py(py, &v)
    }

    /// The distance to conversion of a position: the plies to the next capture or the
    /// game's end when both sides keep the value, the winner converting as soon as it can
    /// and the loser as late as it can; None for a draw, a game over, or a level without
    /// a distance table (`awari dtc` makes them).
    fn distance(&self, py: Python<'_>, position: &Bound<'_, PyAny>) -> PyResult<Option<u16>> {
        let pos = position_of(position)?;
        py.detach(|| self.tb.probe_distance(&pos))
            .map_err(|e| py_err(&e))
    }

    /// The pit (0-based, side to move) perfect play takes in a position, None if the game
    /// is over: a best move; where the level has a distance table, the winner's of least
    /// distance and the loser's of most, so that a won game is converted.
    fn best_move(&self, py: Python<'_>, position: &Bound<'_, PyAny>) -> PyResult<Option<u8>> {
        let pos = position_of(position)?;
        py.detach(|| self.tb.best_move(&pos))
            .map_err(|e| py_err(&e))
    }

    /// The margins of many positions, probed in parallel without the GIL. `positions`: a
    /// 2-D array of integers (NumPy's, or any buffer), one row per position, or a
    /// sequence of positions. A NumPy array in gives a NumPy int8 array out; anything
    /// else a list. A bad row raises the error of its position, naming the row.
    fn probe_many<'py>(
        &self,
        py: Python<'py>,
        positions: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if positions.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err(
                "positions: a list of positions or a 2-D array, not a string",
            ));
        }
        let numpy = py
            .import("sys")?
            .getattr("modules")?
            .get_item("numpy")
            .ok()
            .and_then(|np| np.getattr("ndarray").ok())
            .filter(|nd| positions.is_instance(nd).unwrap_or(false))
            .is_some();
        let mut margins = None;
        if let Ok(buf) = PyUntypedBuffer::get(positions) {
            margins = self.probe_buffer(py, buf)?;
        }
        let margins = match margins {
            Some(m) => m.map_err(|(i, e)| py_err_with(&e, &format!("row {i}: ")))?,
            // Not integers: as Python objects, so that a bad count gets the usual words.
            None if positions.hasattr("tolist")? => {
                self.probe_sequence(py, &positions.call_method0("tolist")?)?
            }
            None => self.probe_sequence(py, positions)?,
        };
        if numpy {
            let bytes: Vec<u8> = margins.iter().map(|&m| m as u8).collect();
            let np = py.import("numpy")?;
            return np.call_method1(
                "frombuffer",
                (PyByteArray::new(py, &bytes), np.getattr("int8")?),
            );
        }
        Ok(PyList::new(py, margins)?.into_any())
    }

    /// The level files present: `(pits, seeds, "raw" or "packed")`, in order.
    fn levels(&self) -> PyResult<Vec<(usize, usize, &'static str)>> {
        let mut out = Vec::new();
        for pits in self.tb.pits() {
            let db = self.tb.database(pits).map_err(|e| py_err(&e))?;
            for (n, packed) in list_levels(db.dir()).map_err(|e| py_err(&e))? {
                out.push((pits, n, if packed { "packed" } else { "raw" }));
            }
        }
        Ok(out)
    }

    /// The rule set: "awari" or "oware".
    #[getter]
    fn rules(&self) -> &'static str {
        self.tb.rules().name()
    }

    /// The board sizes held (pits per side).
    #[getter]
    fn pits(&self) -> Vec<usize> {
        self.tb.pits()
    }

    /// The folder opened.
    #[getter]
    fn path(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    fn __repr__(&self) -> String {
        format!(
            "Tablebase({:?}, rules='{}', pits={:?})",
            self.path.display().to_string(),
            self.rules(),
            self.pits()
        )
    }
}

/// Opens the databases under `path`: a root folder as given to `awari build --dir`, or
/// one database folder such as `db/awari-6`. `rules` ("awari" or "oware") picks a rule
/// set when the folder holds both.
#[pyfunction]
#[pyo3(signature = (path, rules = None))]
fn open(py: Python<'_>, path: PathBuf, rules: Option<&str>) -> PyResult<Tablebase> {
    let rules = rules
        .map(|r| r.parse::<Rules>().map_err(PyValueError::new_err))
        .transpose()?;
    let tb = py
        .detach(|| match rules {
            Some(r) => awari::Tablebase::open_rules(&path, r),
            None => awari::Tablebase::open(&path),
        })
        .map_err(|e| py_err(&e))?;
    Ok(Tablebase { tb, path })
}

#[pymodule]
fn _awari(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_class::<Tablebase>()?;
    m.add_class::<Value>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
