//! Fuzz targets for cltrap's parsers of outside data (see [`targets`]); the binaries in
//! `src/bin/` run them under AFL++.

pub mod targets;
