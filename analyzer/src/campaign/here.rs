//! A campaign's units one after another in this process, without worker processes (the
//! `--in-process` of `replay` and `cover`): nothing to start, but a unit that crashes or hangs
//! the driver takes cltrap with it, and nothing is journaled.

use super::{Campaign, Finished, Lost, UnitContext};
use crate::executor::DeviceSelector;
use std::io::Write;
use std::time::Instant;

/// Runs every unit of `c` here, on `device`, in order, then writes its report.
pub fn run(
    c: &mut dyn Campaign,
    device: &DeviceSelector,
    out: &mut dyn Write,
) -> Result<u8, String> {
    let units = c.units()?;
    let alive = || {};
    let mut results = Vec::with_capacity(units.len());
    for unit in units {
        let started = Instant::now();
        let cx = UnitContext {
            device,
            alive: &alive,
        };
        let result = match c.run_unit(&unit, &cx) {
            Ok(v) => v,
            Err(why) => c.lost(&unit, &Lost::Failed(why)),
        };
        let done = Finished {
            unit: unit.id.clone(),
            device: String::new(),
            millis: started.elapsed().as_millis() as u64,
            result,
        };
        results.push((unit, done));
    }
    c.report(&results, true, out)
}
