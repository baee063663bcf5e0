//! The crate's debug logger, installed once in this test binary (a process
//! has one `log` logger): file output, line format, level filtering, and
//! adaptor failures reported at error level.

use rmm::mr::{
    LimitingAdaptor, MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource,
    TrackingAdaptor,
};

#[test]
fn debug_log_file_format_and_levels() {
    let path = std::env::temp_dir().join(format!("rmm-debug-log-{}.txt", std::process::id()));
    rmm::logger::init_with(log::LevelFilter::Info, Some(&path)).unwrap();
    assert!(
        matches!(rmm::logger::init(), Err(rmm::Error::Logic(_))),
        "only one logger"
    );

    log::info!("hello from the test");
    log::debug!("filtered out at info");
    let mr = LimitingAdaptor::new(SimulatedMemoryResource::new(1 << 30), 1024);
    assert!(mr.allocate(4096, 256, rmm::CudaStreamView::DEFAULT).is_err());
    rmm::logger::set_level(log::LevelFilter::Debug);
    log::debug!("visible at debug");
    let tracked = TrackingAdaptor::new(SimulatedMemoryResource::new(1 << 30), false);
    let p = tracked.allocate(1234, 256, rmm::CudaStreamView::DEFAULT).unwrap();
    tracked.log_outstanding_allocations();
    // SAFETY: p came from `tracked` with these arguments.
    unsafe { tracked.deallocate(p, 1234, 256, rmm::CudaStreamView::DEFAULT) };

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    let me = rmm::logger::thread_id();
    assert!(lines[0].starts_with(&format!("[{me:>6}][")), "{}", lines[0]);
    assert!(
        lines[0].ends_with("][info  ] hello from the test"),
        "{}",
        lines[0]
    );
    // [tid][HH:MM:SS:ffffff][level ]
    let time = &lines[0][9..24];
    assert!(
        time.len() == 15 && time.chars().filter(|&c| c == ':').count() == 3,
        "time {time:?}"
    );
    assert!(
        lines[1].contains("][error ] out_of_memory")
            && lines[1].contains("LimitingAdaptor: exceeded memory limit"),
        "{}",
        lines[1]
    );
    assert!(lines[2].ends_with("][debug ] visible at debug"), "{}", lines[2]);
    assert!(
        lines[3].ends_with("][debug ] Outstanding allocations: 1 (1234 bytes)"),
        "{}",
        lines[3]
    );
    assert_eq!(lines[4], format!("{p}: 1234 bytes"));

    // Pool growth at debug, a failed growth at error.
    let pool = PoolMemoryResource::new(
        SimulatedMemoryResource::new(1 << 20),
        PoolOptions::default().maximum_pool_size(1 << 20),
    )
    .unwrap();
    let q = pool.allocate(4096, 256, rmm::CudaStreamView::DEFAULT).unwrap();
    // Over the maximum, and then more than the room left to grow.
    assert!(pool.allocate(1 << 21, 256, rmm::CudaStreamView::DEFAULT).is_err());
    assert!(pool
        .allocate(768 << 10, 256, rmm::CudaStreamView::DEFAULT)
        .is_err());
    // SAFETY: q came from `pool` with these arguments.
    unsafe { pool.deallocate(q, 4096, 256, rmm::CudaStreamView::DEFAULT) };
    let text = std::fs::read_to_string(&path).unwrap();
    let rest: Vec<&str> = text.lines().skip(5).collect();
    assert!(
        rest.iter()
            .any(|l| l.contains("][debug ] PoolMemoryResource: grew by")),
        "{text}"
    );
    assert!(
        rest.iter()
            .any(|l| l.contains("][error ] out_of_memory") && l.contains("PoolMemoryResource")),
        "{text}"
    );
    std::fs::remove_file(&path).unwrap();
}
