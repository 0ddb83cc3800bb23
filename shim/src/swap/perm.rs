//! Permutation tables for a launch's work-groups.
//!
//! The tables themselves come from [`cltrap_capture::schedule`], the one implementation shared
//! with `cltrap replay --schedules`, so a seed seen in a live run names the same schedule as in
//! a replay. Only the choice of a local size for NULL-local launches is the shim's own.

pub use cltrap_capture::schedule::{group_counts, identity_permutation, random_permutation};

/// A local size for a launch whose application passed NULL (the choice is the
/// implementation's, so any valid one is faithful to the application): per dimension the
/// largest divisor of the global size within `max_items` work-items per group (the kernel's
/// `CL_KERNEL_WORK_GROUP_SIZE`, 0 if unknown) and 64, leaving at least four groups in
/// dimension 0 where the global size allows.
pub fn choose_local(global: &[u64], max_items: u64) -> Vec<u64> {
    let mut room = max_items.clamp(1, 64);
    global
        .iter()
        .enumerate()
        .map(|(d, &g)| {
            let cap = if d == 0 {
                room.min((g / 4).max(1))
            } else {
                room
            };
            let l = (1..=cap.min(g.max(1)))
                .rev()
                .find(|l| g % l == 0)
                .unwrap_or(1);
            room = (room / l).max(1);
            l
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_local_sizes_divide_the_global_size_and_leave_several_groups() {
        assert_eq!(choose_local(&[1024], 4096), vec![64]);
        assert_eq!(choose_local(&[64], 4096), vec![16]);
        assert_eq!(choose_local(&[12], 4096), vec![3]);
        assert_eq!(choose_local(&[7], 4096), vec![1]);
        assert_eq!(choose_local(&[1024], 0), vec![1]);
        let l = choose_local(&[64, 48, 5], 256);
        assert!(l[0] * l[1] * l[2] <= 64, "{l:?}");
        assert!(64 % l[0] == 0 && 48 % l[1] == 0 && 5 % l[2] == 0, "{l:?}");
    }
}
