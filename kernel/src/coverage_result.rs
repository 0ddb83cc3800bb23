//! Turns a raw counter buffer read back after a launch into coverage results: which branch
//! sides and loop-boundary classes were reached, and per barrier which work-groups reached it
//! with all, none or only some of their work-items (divergence).

use serde::{Deserialize, Serialize};

use crate::coverage::{BarrierSite, CoverageMap, SlotKind};
use crate::error::KernelError;
use crate::permute::group_counts;

/// Coverage of one kernel over one or more launches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageResult {
    /// Kernel name.
    pub kernel: String,
    /// The flag slots that belong to this kernel, with whether each was reached.
    pub slots: Vec<SlotHit>,
    /// Branch sides reached / total.
    pub branches: (u32, u32),
    /// Loop-boundary classes reached / total.
    pub loop_boundaries: (u32, u32),
    /// Per barrier of this kernel.
    pub barriers: Vec<BarrierResult>,
    /// The counter buffer was too small for some barrier counters (results incomplete).
    pub overflow: bool,
}

/// One flag slot's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotHit {
    /// Index into the counter buffer (and `CoverageMap::slots[index - header_slots]`).
    pub index: u32,
    /// Branch or loop boundary.
    pub kind: SlotKind,
    /// Reached by at least one work-item.
    pub hit: bool,
}

/// What happened at one barrier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BarrierResult {
    /// Barrier number in the map.
    pub barrier: u32,
    /// Line of the call.
    pub line: u32,
    /// Work-groups in which every work-item reached it (at least once).
    pub groups_all: u64,
    /// Work-groups in which no work-item reached it.
    pub groups_none: u64,
    /// Work-groups in which only some work-items reached it.
    pub divergent: Vec<DivergentGroup>,
}

impl BarrierResult {
    /// A barrier is covered when some group reached it with all its work-items.
    pub fn covered(&self) -> bool {
        self.groups_all > 0
    }
}

/// A work-group that diverged at a barrier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DivergentGroup {
    /// Group id per dimension.
    pub group: [u64; 3],
    /// Arrivals counted (summed over repeated executions of the barrier).
    pub arrivals: u64,
    /// Work-items in the group.
    pub work_items: u64,
}

impl CoverageMap {
    /// Number of flag slots (header included) before the barrier counters.
    pub fn static_len(&self) -> u32 {
        self.header_slots + self.slots.len() as u32
    }

    /// The barrier call site numbered `index`.
    pub fn barrier_site(&self, index: u32) -> Option<&BarrierSite> {
        self.barriers.iter().find(|s| s.index == index)
    }

    /// Length (in u32) of the counter buffer for a launch of `global` size; with an unknown
    /// (NULL) local size it assumes groups of one work-item, the largest possible count.
    pub fn buffer_len(&self, global: &[u64], local: Option<&[u64]>) -> usize {
        let ones = vec![1u64; global.len()];
        let n = group_counts(global, local.unwrap_or(&ones));
        self.static_len() as usize + self.barriers.len() * (n[0] * n[1] * n[2]) as usize
    }

    /// The zeroed counter buffer to pass to the launch (its capacity written into slot 0).
    pub fn initial_buffer(&self, global: &[u64], local: Option<&[u64]>) -> Vec<u32> {
        let len = self.buffer_len(global, local);
        let mut v = vec![0u32; len];
        v[0] = u32::try_from(len).unwrap_or(u32::MAX);
        v
    }

    /// Interprets `counters` (read back after launching `kernel` with `global` size).
    pub fn evaluate(
        &self,
        kernel: &str,
        counters: &[u32],
        global: &[u64],
    ) -> Result<CoverageResult, KernelError> {
        let k = self
            .kernels
            .iter()
            .find(|k| k.name == kernel)
            .ok_or_else(|| KernelError::NoSuchKernel(kernel.into()))?;
        if counters.len() < self.static_len() as usize {
            return Err(KernelError::CounterSize {
                got: counters.len(),
                want: self.static_len() as usize,
            });
        }
        let mine = |f: &String| k.functions.contains(f);
        let mut res = CoverageResult {
            kernel: kernel.into(),
            slots: Vec::new(),
            branches: (0, 0),
            loop_boundaries: (0, 0),
            barriers: Vec::new(),
            overflow: counters[1] != 0,
        };
        for s in self.slots.iter().filter(|s| mine(&s.function)) {
            res.slots.push(SlotHit {
                index: s.index,
                kind: s.kind,
                hit: counters[s.index as usize] != 0,
            });
        }
        res.recount();
        let local = [counters[2] as u64, counters[3] as u64, counters[4] as u64];
        let n = [counters[5] as u64, counters[6] as u64, counters[7] as u64];
        // Group counts come from the device; a buffer that cannot hold them all (or garbage
        // from a crashed kernel) is reported as overflow rather than trusted. A program without
        // barriers has no per-group counters, so only the device's own flag counts then.
        let ng = if self.barriers.is_empty() {
            0
        } else {
            let ng = n[0]
                .checked_mul(n[1])
                .and_then(|x| x.checked_mul(n[2]))
                .unwrap_or(u64::MAX);
            let room =
                (counters.len() as u64 - self.static_len() as u64) / self.barriers.len() as u64;
            if ng > room {
                res.overflow = true;
                0
            } else {
                ng
            }
        };
        let g3 = [
            global.first().copied().unwrap_or(1),
            global.get(1).copied().unwrap_or(1),
            global.get(2).copied().unwrap_or(1),
        ];
        for b in self.barriers.iter().filter(|b| mine(&b.function)) {
            let mut r = BarrierResult {
                barrier: b.index,
                line: b.line,
                groups_all: 0,
                groups_none: 0,
                divergent: Vec::new(),
            };
            for g in 0..ng {
                let gid = [g % n[0], (g / n[0]) % n[1], g / (n[0] * n[1])];
                let size: u64 = (0..3)
                    .map(|d| local[d].min(g3[d].saturating_sub(gid[d] * local[d])))
                    .product();
                let at = self.static_len() as u64 + b.index as u64 * ng + g;
                let arrivals = counters.get(at as usize).copied().unwrap_or(0) as u64;
                if arrivals == 0 {
                    r.groups_none += 1;
                } else if size > 0 && arrivals.is_multiple_of(size) {
                    r.groups_all += 1;
                } else {
                    r.divergent.push(DivergentGroup {
                        group: gid,
                        arrivals,
                        work_items: size,
                    });
                }
            }
            res.barriers.push(r);
        }
        Ok(res)
    }
}

impl CoverageResult {
    /// Adds another launch's result of the same kernel and map (a side is covered if any launch
    /// covered it; barrier tallies add up).
    pub fn merge(&mut self, other: &CoverageResult) {
        for (mine, theirs) in self.slots.iter_mut().zip(&other.slots) {
            mine.hit |= theirs.hit;
        }
        self.recount();
        self.overflow |= other.overflow;
        for (mine, theirs) in self.barriers.iter_mut().zip(&other.barriers) {
            mine.groups_all += theirs.groups_all;
            mine.groups_none += theirs.groups_none;
            mine.divergent.extend(theirs.divergent.iter().cloned());
        }
    }

    fn recount(&mut self) {
        let tally = |kind: SlotKind, slots: &[SlotHit]| {
            let of: Vec<_> = slots.iter().filter(|s| s.kind == kind).collect();
            (of.iter().filter(|s| s.hit).count() as u32, of.len() as u32)
        };
        self.branches = tally(SlotKind::Branch, &self.slots);
        self.loop_boundaries = tally(SlotKind::LoopBoundary, &self.slots);
    }
}
