//! Naming the place in the application where a program was built or a kernel launched.
//!
//! The shim records a return address as module + offset (it must stay cheap); turning that
//! into `file:line` is done here, after the fact, with binutils' `addr2line` when it is
//! installed and the module has debug information. Lookups are batched per module, so
//! listing thousands of launches costs one `addr2line` process per module.

use cltrap_capture::Site;
use std::collections::HashMap;
use std::process::Command;

/// What `addr2line` said about one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Demangled function name, when known.
    pub function: Option<String>,
    /// `file:line`, when known.
    pub location: Option<String>,
}

/// Resolves sites to source locations, remembering every answer.
#[derive(Debug, Default)]
pub struct Resolver {
    cache: HashMap<(String, u64), Option<Resolved>>,
    /// False when `addr2line` could not be started: then nothing more is tried.
    available: Option<bool>,
}

impl Resolver {
    /// A resolver that has not looked anything up yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Looks up all `sites` at once (one process per module).
    pub fn prefetch<'a>(&mut self, sites: impl IntoIterator<Item = &'a Site>) {
        let mut by_module: HashMap<String, Vec<u64>> = HashMap::new();
        for s in sites {
            if s.location.is_some() || self.cache.contains_key(&(s.module.clone(), s.offset)) {
                continue;
            }
            let v = by_module.entry(s.module.clone()).or_default();
            if !v.contains(&s.offset) {
                v.push(s.offset);
            }
        }
        for (module, offsets) in by_module {
            let answers = self.run_addr2line(&module, &offsets);
            for (i, off) in offsets.iter().enumerate() {
                let r = answers.as_ref().and_then(|a| a.get(i).cloned()).flatten();
                self.cache.insert((module.clone(), *off), r);
            }
        }
    }

    /// The resolution of one site (looked up now if it was not prefetched).
    pub fn resolve(&mut self, site: &Site) -> Option<Resolved> {
        if let Some(loc) = &site.location {
            return Some(Resolved {
                function: site.symbol.clone(),
                location: Some(loc.clone()),
            });
        }
        let key = (site.module.clone(), site.offset);
        if !self.cache.contains_key(&key) {
            self.prefetch(std::iter::once(site));
        }
        self.cache.get(&key).cloned().flatten()
    }

    /// `file:line (function)` when resolvable, else `module+0xoffset (symbol)`.
    pub fn describe(&mut self, site: &Site) -> String {
        let resolved = self.resolve(site);
        format_site(site, resolved.as_ref())
    }

    fn run_addr2line(&mut self, module: &str, offsets: &[u64]) -> Option<Vec<Option<Resolved>>> {
        if self.available == Some(false) || module.is_empty() || offsets.is_empty() {
            return None;
        }
        // The recorded offset is a return address; the call is the instruction before it.
        let args: Vec<String> = offsets
            .iter()
            .map(|o| format!("0x{:x}", o.saturating_sub(1)))
            .collect();
        let out = match Command::new("addr2line")
            .args(["-f", "-C", "-e", module])
            .args(&args)
            .output()
        {
            Ok(o) => o,
            Err(_) => {
                self.available = Some(false);
                return None;
            }
        };
        self.available = Some(true);
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        Some(
            (0..offsets.len())
                .map(|i| {
                    let func = lines.get(2 * i).map(|s| s.trim().to_string());
                    let loc = lines.get(2 * i + 1).map(|s| s.trim().to_string());
                    parse_answer(func, loc)
                })
                .collect(),
        )
    }
}

fn parse_answer(func: Option<String>, loc: Option<String>) -> Option<Resolved> {
    let function = func.filter(|f| !f.is_empty() && f != "??");
    // addr2line appends " (discriminator N)"; it says nothing to a user.
    let location = loc
        .map(|l| {
            l.split(" (discriminator")
                .next()
                .unwrap_or("")
                .trim()
                .to_string()
        })
        .filter(|l| !l.starts_with("??") && !l.ends_with(":0") && !l.ends_with(":?"));
    // Without line information addr2line names the nearest preceding symbol, which in a
    // stripped program is often an unrelated exported one (CLBlast's tuners launch from
    // "clblast::BLASError::~BLASError()"): then the site keeps the shim's symbol, which is
    // only recorded when it contains the address.
    location.map(|location| Resolved {
        function,
        location: Some(location),
    })
}

/// The one-line form of a site used by `list` and `show`.
pub fn format_site(site: &Site, resolved: Option<&Resolved>) -> String {
    let module = std::path::Path::new(&site.module)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| site.module.clone());
    let symbol = resolved
        .and_then(|r| r.function.clone())
        .or_else(|| site.symbol.clone());
    match (resolved.and_then(|r| r.location.clone()), symbol) {
        (Some(loc), Some(sym)) => format!("{loc} ({sym})"),
        (Some(loc), None) => loc,
        (None, Some(sym)) => format!("{module}+0x{:x} ({sym})", site.offset),
        (None, None) => format!("{module}+0x{:x}", site.offset),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site {
        Site {
            module: "/usr/bin/app".into(),
            offset: 0x1a2b,
            symbol: None,
            location: None,
        }
    }

    #[test]
    fn unresolved_sites_show_module_offset_and_symbol() {
        assert_eq!(format_site(&site(), None), "app+0x1a2b");
        let s = Site {
            symbol: Some("main".into()),
            ..site()
        };
        assert_eq!(format_site(&s, None), "app+0x1a2b (main)");
    }

    #[test]
    fn resolved_sites_show_file_and_line() {
        let r = Resolved {
            function: Some("run_kernels".into()),
            location: Some("app.c:42".into()),
        };
        assert_eq!(format_site(&site(), Some(&r)), "app.c:42 (run_kernels)");
    }

    #[test]
    fn addr2line_unknowns_are_dropped() {
        assert_eq!(parse_answer(Some("??".into()), Some("??:0".into())), None);
        let r = parse_answer(Some("f".into()), Some("a.c:7 (discriminator 2)".into())).unwrap();
        assert_eq!(r.location.as_deref(), Some("a.c:7"));
        // A function name without a line is a guess (nearest symbol): not used.
        assert_eq!(parse_answer(Some("f".into()), Some("??:?".into())), None);
    }

    #[test]
    fn a_recorded_location_is_used_without_addr2line() {
        let mut r = Resolver::new();
        let s = Site {
            location: Some("host.c:10".into()),
            ..site()
        };
        assert_eq!(r.describe(&s), "host.c:10");
    }

    #[test]
    fn this_test_binary_resolves_to_a_rust_source_line_when_addr2line_exists() {
        // A real lookup: the address of this function inside the test executable.
        let exe = std::env::current_exe().unwrap();
        if Command::new("addr2line").arg("--version").output().is_err() {
            return;
        }
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let exe_s = exe.to_string_lossy().to_string();
        let base = maps
            .lines()
            .filter(|l| l.ends_with(exe_s.as_str()))
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let range = f.next()?;
                f.next();
                let off = u64::from_str_radix(f.next()?, 16).ok()?;
                let start = u64::from_str_radix(range.split('-').next()?, 16).ok()?;
                Some(start - off)
            })
            .next()
            .unwrap();
        let addr = parse_answer as *const () as usize as u64;
        let s = Site {
            module: exe_s,
            offset: addr - base + 1,
            symbol: None,
            location: None,
        };
        let mut r = Resolver::new();
        let text = r.describe(&s);
        assert!(text.contains("site.rs:"), "{text}");
    }
}
