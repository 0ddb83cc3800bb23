//! The units a run has not handed out yet, and which worker slot takes which.
//!
//! Two ways, chosen by the campaign ([`super::Campaign::contiguous`]):
//! - **shared**: one queue in the campaign's order; every slot takes the next unit. Right when
//!   a unit's cost does not depend on which units its worker ran before (mutants, kernels), and
//!   when the order itself matters (mutate hands out every mutant's first batch of test cases
//!   before any second batch, so a batch that kills drops the later ones before they run).
//! - **contiguous**: the units split into one run of neighbours per slot; a slot takes the
//!   front of its own run, and a slot whose run is empty takes the back half of the longest run
//!   left. Right when neighbouring units share work a worker keeps: a launch's inputs that the
//!   capture holds only as digests are re-created by re-executing the launches before it (the
//!   executor's deriver), which a worker does once for a run of neighbouring launches but again
//!   for every launch when two workers take turns along the list (the test cases of a 2-GPU
//!   mutate campaign took 40% longer per unit than on one GPU).
//!
//! Either way a unit whose worker died and that the campaign tries again goes first to the next
//! slot that asks, and no unit is handed out twice.

use super::Unit;
use std::collections::VecDeque;

/// The units not handed out, with their positions in the campaign's order.
#[derive(Debug, Default)]
pub(super) struct Queue {
    /// Units to try again, before any other.
    again: VecDeque<(usize, Unit)>,
    /// One run per slot (contiguous), or a single run every slot takes from (shared).
    runs: Vec<VecDeque<(usize, Unit)>>,
}

impl Queue {
    /// One queue in order, shared by every slot.
    pub(super) fn shared(units: VecDeque<(usize, Unit)>) -> Queue {
        Queue {
            again: VecDeque::new(),
            runs: vec![units],
        }
    }

    /// `units` cut into `slots` runs of neighbours (as even as they go), one per slot.
    pub(super) fn contiguous(units: VecDeque<(usize, Unit)>, slots: usize) -> Queue {
        let slots = slots.max(1);
        let n = units.len();
        let mut rest = units;
        let mut runs = Vec::with_capacity(slots);
        for i in 0..slots {
            // Run i ends where an even split puts slot i + 1's first unit.
            let end = n * (i + 1) / slots - n * i / slots;
            let tail = rest.split_off(end.min(rest.len()));
            runs.push(std::mem::replace(&mut rest, tail));
        }
        Queue {
            again: VecDeque::new(),
            runs,
        }
    }

    /// The next unit for slot `slot`: a unit to try again, else the front of the slot's run,
    /// else (its run empty) the front of the back half of the longest run left, whose rest
    /// becomes the slot's run.
    pub(super) fn pop(&mut self, slot: usize) -> Option<(usize, Unit)> {
        if let Some(u) = self.again.pop_front() {
            return Some(u);
        }
        let own = slot % self.runs.len().max(1);
        if let Some(u) = self.runs.get_mut(own)?.pop_front() {
            return Some(u);
        }
        let (longest, len) = self
            .runs
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.len()))
            .max_by_key(|&(i, len)| (len, std::cmp::Reverse(i)))?;
        if len == 0 {
            return None;
        }
        let taken = self.runs[longest].split_off(len / 2);
        self.runs[own] = taken;
        self.runs[own].pop_front()
    }

    /// Puts `unit` first in line for the next slot that asks (a unit tried again).
    pub(super) fn again(&mut self, unit: (usize, Unit)) {
        self.again.push_front(unit);
    }

    /// Takes out every unit not handed out whose id `drop` says; returns how many.
    pub(super) fn drop_where(&mut self, drop: impl Fn(&Unit) -> bool) -> usize {
        let before = self.len();
        for run in std::iter::once(&mut self.again).chain(self.runs.iter_mut()) {
            run.retain(|(_, u)| !drop(u));
        }
        before - self.len()
    }

    /// How many units are not handed out.
    pub(super) fn len(&self) -> usize {
        self.again.len() + self.runs.iter().map(VecDeque::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(n: usize) -> VecDeque<(usize, Unit)> {
        (0..n)
            .map(|i| {
                (
                    i,
                    Unit {
                        id: format!("u{i}"),
                        payload: serde_json::Value::Null,
                    },
                )
            })
            .collect()
    }

    fn take(q: &mut Queue, slot: usize) -> Option<usize> {
        q.pop(slot).map(|(i, _)| i)
    }

    #[test]
    fn a_shared_queue_hands_out_in_order_whichever_slot_asks() {
        let mut q = Queue::shared(units(5));
        let got: Vec<_> = [1, 0, 1, 1, 0, 0]
            .iter()
            .map(|&s| take(&mut q, s))
            .collect();
        assert_eq!(got, [Some(0), Some(1), Some(2), Some(3), Some(4), None]);
    }

    #[test]
    fn contiguous_slots_take_neighbours_then_half_of_the_longest_run_left() {
        let mut q = Queue::contiguous(units(10), 2);
        // Slot 0 has 0..5, slot 1 has 5..10.
        assert_eq!(take(&mut q, 0), Some(0));
        assert_eq!(take(&mut q, 1), Some(5));
        assert_eq!(take(&mut q, 0), Some(1));
        assert_eq!(take(&mut q, 0), Some(2));
        assert_eq!(take(&mut q, 0), Some(3));
        assert_eq!(take(&mut q, 0), Some(4));
        // Slot 0's run is empty: it takes the back half of slot 1's 6..10, that is 8 and 9.
        assert_eq!(take(&mut q, 0), Some(8));
        assert_eq!(take(&mut q, 1), Some(6));
        assert_eq!(take(&mut q, 0), Some(9));
        assert_eq!(take(&mut q, 1), Some(7));
        assert_eq!(take(&mut q, 1), None);
        assert_eq!(take(&mut q, 0), None);
    }

    #[test]
    fn every_unit_is_handed_out_once_however_the_slots_ask() {
        for n in [0, 1, 2, 3, 7, 64, 101] {
            for slots in [1, 2, 3, 4, 8] {
                let mut q = Queue::contiguous(units(n), slots);
                assert_eq!(q.len(), n);
                let mut seen = Vec::new();
                let mut s = 0;
                while let Some(i) = take(&mut q, s % slots) {
                    seen.push(i);
                    // An uneven pattern: slot 0 asks three times as often.
                    s = if s % 4 == 3 { 1 } else { s + 1 };
                }
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n} slots={slots}");
                assert_eq!(q.len(), 0);
            }
        }
    }

    #[test]
    fn units_tried_again_go_first_and_dropped_units_never_come() {
        let mut q = Queue::contiguous(units(6), 2);
        assert_eq!(q.drop_where(|u| u.id == "u1" || u.id == "u4"), 2);
        assert_eq!(take(&mut q, 0), Some(0));
        q.again((
            0,
            Unit {
                id: "u0".into(),
                payload: serde_json::Value::Null,
            },
        ));
        // The unit tried again goes to whichever slot asks next.
        assert_eq!(take(&mut q, 1), Some(0));
        assert_eq!(take(&mut q, 1), Some(3));
        assert_eq!(take(&mut q, 0), Some(2));
        assert_eq!(take(&mut q, 0), Some(5));
        assert_eq!(take(&mut q, 0), None);
        assert_eq!(q.len(), 0);
    }
}
