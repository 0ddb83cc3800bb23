//! What the shim says to the user: one line on stderr per message, prefixed `cltrap:`, never
//! on stdout (it belongs to the application). Apart from the sink and the settings, which both
//! speak, so neither imports the other to do so.

use std::sync::atomic::{AtomicBool, Ordering};

static REPORTED: AtomicBool = AtomicBool::new(false);

/// Prints one line on stderr, prefixed `cltrap:` (never stdout: it belongs to the app).
pub fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "cltrap: {message}");
}

/// Reports the first internal problem of this process; later ones are dropped so that a
/// recurring fault does not flood the application's stderr.
pub fn report_once(message: &str) {
    if !REPORTED.swap(true, Ordering::Relaxed) {
        say(message);
    }
}
