//! What a worker of a launch campaign keeps between its units: a session on the device it is
//! pinned to and the state built there (programs, derived inputs), opened on its first unit
//! and again only when the runner pins it to another device.
//!
//! Why one type: `replay`, `replay --schedules` and `cover` each kept the same session by hand;
//! what differs between them is only the state and how a failure to open becomes their unit's
//! result.

use crate::executor::{DeviceSelector, ExecError, Session};

/// A worker's session on one device and what it built there.
pub struct Kept<T> {
    device: DeviceSelector,
    /// The session on the pinned device.
    pub session: Session,
    /// What the campaign keeps on it between units.
    pub state: T,
}

impl<T> Kept<T> {
    /// The session and state in `slot` when they are on `device`, else a new session there with
    /// `make`'s state (the old one, on another device, is dropped). Err: the session could not
    /// be opened; the caller words it as its unit's result.
    pub fn on<'a>(
        slot: &'a mut Option<Kept<T>>,
        device: &DeviceSelector,
        make: impl FnOnce() -> T,
    ) -> Result<&'a mut Kept<T>, ExecError> {
        let kept = match slot.take() {
            Some(k) if &k.device == device => k,
            _ => Kept {
                device: device.clone(),
                session: Session::open(device)?,
                state: make(),
            },
        };
        Ok(slot.insert(kept))
    }
}

/// An error's first line (for the report's row) and its whole text (for the details).
pub fn error_lines(e: &ExecError) -> (String, String) {
    let full = e.to_string();
    let line = full.lines().next().unwrap_or("").to_string();
    (line, full)
}
