//! The NDRange of a launch, checked before any driver sees it.
//!
//! A capture (or an interface file) is untrusted: a `local_size` of 0 makes PoCL divide by
//! zero inside `clEnqueueNDRangeKernel` (the replay worker dies of a signal, saying
//! nothing), and a global size of 2^32 work-items runs until the watchdog. Every launch the
//! executor makes passes [`check_ndrange`] first, so such a launch is refused with one
//! sentence and the other launches still run.

/// The most work-items (the product of the global sizes) one launch may have: 2^31. Far
/// above what the captured applications launch (a 4096x4096 image is 2^24), far below what
/// only a damaged record asks for; a device runs a launch this large for minutes.
pub const MAX_WORK_ITEMS: u64 = 1 << 31;

/// Why an NDRange is refused, in one sentence; `Ok` when the driver may be asked to run it.
///
/// Checks: `work_dim` is 1, 2 or 3; the global size, and the local size and offset when
/// given, have exactly `work_dim` entries; every local size is nonzero and the work-group
/// size (their product) fits 64 bits; the work-items (the product of the global sizes) are
/// at most [`MAX_WORK_ITEMS`]; offset plus size fits in a `size_t`. Whether a local size
/// must divide the global size depends on the device's OpenCL version (2.0 allows a
/// remainder), and is left to the driver, which refuses it with an error, not a crash.
pub fn check_ndrange(
    work_dim: u32,
    global: &[u64],
    local: Option<&[u64]>,
    offset: Option<&[u64]>,
) -> Result<(), String> {
    if !(1..=3).contains(&work_dim) {
        return Err(format!("work_dim is {work_dim}; OpenCL allows 1, 2 or 3"));
    }
    let dim = work_dim as usize;
    let lengths = [
        ("global size", Some(global.len())),
        ("local size", local.map(<[u64]>::len)),
        ("global offset", offset.map(<[u64]>::len)),
    ];
    for (what, len) in lengths {
        if let Some(n) = len.filter(|n| *n != dim) {
            return Err(format!(
                "the {what} has {n} dimension(s) but work_dim is {work_dim}"
            ));
        }
    }
    if let Some(l) = local {
        if let Some(d) = l.iter().position(|v| *v == 0) {
            return Err(format!(
                "the local size is 0 in dimension {d}; a work-group needs at least one work-item"
            ));
        }
        if l.iter().try_fold(1u64, |a, v| a.checked_mul(*v)).is_none() {
            return Err(format!(
                "the local size {} does not fit in 64 bits",
                dims(l)
            ));
        }
    }
    let items = global.iter().try_fold(1u64, |a, v| a.checked_mul(*v));
    match items {
        Some(n) if n <= MAX_WORK_ITEMS => {}
        _ => {
            let count = items.map_or("over 2^64".to_string(), |n| n.to_string());
            let size = if global.len() > 1 {
                format!("the global size {} is {count}", dims(global))
            } else {
                format!("the global size is {count}")
            };
            return Err(format!(
                "{size} work-items, more than the {MAX_WORK_ITEMS} one launch may have"
            ));
        }
    }
    if let Some(o) = offset {
        let max = usize::MAX as u64;
        if o.iter().zip(global).any(|(o, g)| o.checked_add(*g).is_none_or(|e| e > max)) {
            return Err(format!(
                "the global offset {} plus the global size {} overflows a size_t",
                dims(o),
                dims(global)
            ));
        }
    }
    Ok(())
}

fn dims(d: &[u64]) -> String {
    crate::list::format_dims(Some(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_ranges_pass() {
        assert!(check_ndrange(1, &[1024], Some(&[64]), None).is_ok());
        assert!(check_ndrange(2, &[100, 7], None, Some(&[3, 0])).is_ok());
        assert!(check_ndrange(3, &[8, 8, 4], Some(&[2, 2, 2]), None).is_ok());
        assert!(check_ndrange(1, &[MAX_WORK_ITEMS], None, None).is_ok());
    }

    #[test]
    fn malformed_ranges_are_refused_with_their_reason() {
        let why = |r: Result<(), String>| r.expect_err("refused");
        assert!(why(check_ndrange(0, &[], None, None)).contains("work_dim is 0"));
        assert!(why(check_ndrange(4, &[1, 1, 1, 1], None, None)).contains("work_dim is 4"));
        assert!(why(check_ndrange(2, &[64], None, None)).contains("global size has 1"));
        assert!(why(check_ndrange(1, &[64], Some(&[8, 8]), None)).contains("local size has 2"));
        assert!(why(check_ndrange(1, &[64], None, Some(&[])))
            .contains("global offset has 0"));
        assert!(why(check_ndrange(1, &[64], Some(&[0]), None)).contains("local size is 0"));
        assert!(why(check_ndrange(1, &[1 << 32], None, None)).contains("4294967296 work-items"));
        assert!(why(check_ndrange(2, &[1 << 40, 1 << 40], None, None)).contains("over 2^64"));
        assert!(why(check_ndrange(1, &[2], None, Some(&[u64::MAX]))).contains("overflows"));
        assert!(why(check_ndrange(2, &[1, 1], Some(&[1 << 40, 1 << 40]), None))
            .contains("64 bits"));
    }
}
