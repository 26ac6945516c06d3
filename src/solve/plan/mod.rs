//! Planning a build: what each level needs (solver memory, disk) on each of `R` ranks,
//! how long it should take at a measured rate, and whether a machine has it, so that
//! nobody starts a build that cannot finish (DESIGN.md section 5.4). By concern: the way
//! each level is built ([`method`]), its memory and disk ([`needs`]), its time
//! ([`timing`]) from the rates measured ([`rates`], in the columns of [`schema`]), and the
//! refusals ([`refuse`]).

pub mod method;
pub mod needs;
pub mod rates;
pub mod refuse;
pub mod schema;
pub mod timing;

pub(crate) use method::slice_way;
pub use method::{way, LevelMemory, LevelMethod, MethodRequest, SPILL_FROM};
pub use needs::{plan, DiskFit, LevelPlan, Machine, DEFAULT_PACK_RATIO, STREAM_BUFFER};
pub use refuse::{check_build_fits, check_level_fits, check_slice_fits, LowerHeld};
pub use timing::{
    measured_rate, rate_at, rate_fall, way_cost, Calibration, Measured, Rate, WayCosts,
    BUSY_AT_LEAST, MEASURED_FROM, MEASURED_LEVELS, RATE_FALL, RATE_FALL_LARGE, RATE_KNEE,
};
