//! The capture settings of this process, read once from the `CLTRAP_*` controls.

use cltrap_capture::Settings;
use once_cell::sync::Lazy;

static SETTINGS: Lazy<Option<Settings>> = Lazy::new(|| match Settings::from_env() {
    Ok(s) if s.capture => {
        if s.stats.is_some() {
            crate::core::enable_timing();
        }
        Some(s)
    }
    Ok(_) => None,
    Err(e) => {
        crate::say::say(&format!("{e}; capture is off for this process"));
        None
    }
});

/// Settings, when capture is on (None: off, or the controls could not be understood).
pub fn settings() -> Option<&'static Settings> {
    SETTINGS.as_ref()
}

/// Whether this process captures at all.
pub fn capture_on() -> bool {
    settings().is_some()
}
