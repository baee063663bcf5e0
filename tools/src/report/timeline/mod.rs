//! Replays a memory-event log into a timeline, computes its statistics and
//! draws it as an SVG.
//!
//! Three parts: the model (events to allocations with their live intervals,
//! bytes in use, failures and statistics: [`Timeline`]; the address axis:
//! [`AddressMap`]); the layout, which turns a timeline into what the picture
//! shows (x positions, the step line, rectangles on the pixel grid); and the
//! SVG drawing with its colours, panels and legend ([`render_svg`]).
//!
//! The SVG has two panels that share the x axis (time, or event index):
//! * bytes in use after each event, as a step line;
//! * the address space: one rectangle per allocation spanning
//!   `[allocated, freed)` on x and `[address, address + size)` on y, with
//!   addresses relative to the lowest address seen, coloured by size or by
//!   thread, so that fragmentation shows as holes between live blocks.
//!
//! Frees of unknown pointers are counted (and not drawn), allocations never
//! freed extend to the end of the log, failed allocations are marked in red.
//! Large logs are reduced so the SVG stays small: the step line keeps the
//! first, lowest, highest and last sample of each horizontal bucket (so the
//! peak survives), and rectangles are snapped to the pixel grid, deduplicated,
//! and past a budget the smallest are merged into runs of a coarse occupancy
//! grid (drawn paler).
#![forbid(unsafe_code)]

mod layout;
mod model;
mod svg;

pub use layout::{ColorBy, RenderInfo, TimelineOptions, XAxis};
pub use model::{fragmentation, AddressMap, Allocation, Failure, Fragmentation, Timeline, TimelineStats};
pub use svg::render_svg;
