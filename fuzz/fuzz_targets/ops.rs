//! Fuzz target `ops`: arbitrary bytes decoded into a sequence of
//! allocations and frees on four streams, adversarial frees included,
//! driving one sub-allocator over the simulated resource
//! ([`SimulatedMemoryResource`]): the pool, the fixed-size, the binning or
//! the arena resource, with options (sizes, bins, the simulated device's
//! capacity) taken from the input too.
//!
//! The input: byte 0 picks the resource, the next bytes its options; then
//! each operation is one byte of kind and a few bytes of arguments (an input
//! that ends early reads as zeros):
//!
//! | kind | operation |
//! |---|---|
//! | allocate | a size (from 0 bytes to far beyond the device) and an alignment (valid or not) on one of four streams |
//! | free | one live allocation, on any of the four streams (a stream other than the allocation's is valid) |
//! | bad free | a double free, a never-allocated address, an interior pointer, a wrong size or a foreign pointer (live in the upstream, never the resource's) |
//!
//! Checked after every operation (and it panics, which libFuzzer reports as
//! a crash, when one fails):
//! * an allocation is aligned and overlaps no live allocation; a failed one
//!   is an out-of-memory or bad-argument error, never a panic;
//! * a valid free logs no error and is not counted as refused;
//! * a bad free logs an error, is counted as refused exactly once, and
//!   changes nothing observable (free bytes, pool size, the upstream's bytes);
//! * the resource's counters match the model (free + live = pool size);
//! * at the end, with every allocation freed and the resource dropped, the
//!   upstream holds only the foreign allocations and never saw a bad free.
//!
//! Not driven: `VirtualPoolMemoryResource`, which reserves and maps device
//! memory through the driver at construction and cannot be built over the
//! simulated resource. Its bookkeeping is the pool's (the same
//! stream-ordered core, free lists and live record), which this target
//! drives.
#![no_main]

mod ops_model;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ops_model::run(data);
});
