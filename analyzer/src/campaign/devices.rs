//! Which devices a campaign's workers are pinned to: `--devices all`, a list of indices or
//! name substrings, or (by default) the one device the command's `--platform`/`--device`
//! select. Workers get their device by index through [`ENV`], so a worker opens exactly the
//! device the runner chose (the ICD loader lists platforms in the same order in every process
//! of one environment).

use crate::executor::{list_devices, DeviceSelector};

/// The environment variable that pins a worker: `PLATFORM:DEVICE` (indices).
pub const ENV: &str = "CLTRAP_UNIT_DEVICE";
/// The environment variable naming a worker's device for its results (`P:D name`).
pub const NAME_ENV: &str = "CLTRAP_UNIT_DEVICE_NAME";

/// A device a worker is pinned to.
#[derive(Debug, Clone, PartialEq)]
pub struct Pinned {
    /// Platform and device by index.
    pub selector: DeviceSelector,
    /// `P:D name`, as results record it.
    pub name: String,
}

impl Pinned {
    /// The value of [`ENV`] for this device.
    pub fn env(&self) -> String {
        format!(
            "{}:{}",
            self.selector.platform.as_deref().unwrap_or("0"),
            self.selector.device.as_deref().unwrap_or("0")
        )
    }
}

fn matches(want: &str, index: usize, name: &str) -> bool {
    match want.trim().parse::<usize>() {
        Ok(i) => i == index,
        Err(_) => name.to_lowercase().contains(&want.trim().to_lowercase()),
    }
}

/// The devices `spec` names within the platform `base` selects (the first platform with a
/// device when it selects none). Without `spec`: the one device `base` selects.
pub fn resolve(spec: Option<&str>, base: &DeviceSelector) -> Result<Vec<Pinned>, String> {
    let all = list_devices().map_err(|e| e.to_string())?;
    let platform = all
        .iter()
        .enumerate()
        .filter(|(i, (n, _))| base.platform.as_deref().is_none_or(|w| matches(w, *i, n)))
        .find(|(_, (_, devs))| {
            devs.iter().enumerate().any(|(i, n)| {
                spec.is_some() || base.device.as_deref().is_none_or(|w| matches(w, i, n))
            })
        });
    let Some((p, (pname, devs))) = platform else {
        return Err(match &base.platform {
            Some(w) => format!("no platform `{w}` with a device"),
            None => "no OpenCL platform with a device".into(),
        });
    };
    let pin = |d: usize| Pinned {
        selector: DeviceSelector {
            platform: Some(p.to_string()),
            device: Some(d.to_string()),
        },
        name: format!("{p}:{d} {}", devs[d]),
    };
    let Some(spec) = spec else {
        let d = devs
            .iter()
            .enumerate()
            .position(|(i, n)| base.device.as_deref().is_none_or(|w| matches(w, i, n)))
            .unwrap_or(0);
        return Ok(vec![pin(d)]);
    };
    if spec.trim() == "all" {
        return Ok((0..devs.len()).map(pin).collect());
    }
    let mut out: Vec<Pinned> = Vec::new();
    for want in spec.split(',').filter(|w| !w.trim().is_empty()) {
        let hits: Vec<usize> = (0..devs.len())
            .filter(|&i| matches(want, i, &devs[i]))
            .collect();
        if hits.is_empty() {
            let listing: Vec<String> = devs
                .iter()
                .enumerate()
                .map(|(i, n)| format!("{i}: {n}"))
                .collect();
            return Err(format!(
                "--devices: no device `{}` on platform {pname} (it has {})",
                want.trim(),
                listing.join(", ")
            ));
        }
        for d in hits {
            let pinned = pin(d);
            if !out.contains(&pinned) {
                out.push(pinned);
            }
        }
    }
    if out.is_empty() {
        return Err("--devices names no device".into());
    }
    Ok(out)
}

/// The device a worker was pinned to, if it is one.
pub fn pinned_here() -> Option<DeviceSelector> {
    let v = std::env::var(ENV).ok()?;
    let (p, d) = v.split_once(':')?;
    Some(DeviceSelector {
        platform: Some(p.to_string()),
        device: Some(d.to_string()),
    })
}
