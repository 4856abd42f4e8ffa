//! The process's allocator, and returning freed heap memory to the operating system.

/// jemalloc for every binary built on this crate (the server, the bench, tests, examples
/// and benches measure one allocator). Against glibc's malloc it took about a quarter less
/// server CPU per bulk-loaded object and per decision (a load allocates and frees on
/// different threads, where glibc's arenas lock and consolidate), at the same RSS per pod;
/// mimalloc was as fast but held 25–45 MB more at 150k pods.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Hands the allocator's unused pages back to the OS at once (jemalloc would otherwise
/// return them over ~10 s). After a bulk load most of what decoding allocated is free
/// again; without this the process's RSS stays near its peak instead of what the cache
/// holds. Takes milliseconds on a large heap: call it on a blocking thread.
#[cfg(not(target_env = "msvc"))]
pub fn release_free_memory() {
    // 4096 is MALLCTL_ARENAS_ALL (every arena). Purging only releases pages that hold no
    // live allocation.
    jemalloc_command(c"arena.4096.purge");
}

/// Hands what the calling thread freed but holds in its own cache back to the shared
/// arenas. A thread of the blocking pool that ran a bulk load's stage holds there
/// objects it will not reuse soon, and the pages under them stay resident however the
/// arenas are purged: flushed before the purge after a `Sync` load, its converter's and
/// applier's caches held ~7 bytes of RSS per pod at 150k pods, and ~100 per node.
#[cfg(not(target_env = "msvc"))]
pub fn flush_thread_cache() {
    // Flushing only returns cached free objects to their arenas.
    jemalloc_command(c"thread.tcache.flush");
}

/// Runs a jemalloc control that takes no input and gives no output.
#[cfg(not(target_env = "msvc"))]
fn jemalloc_command(name: &std::ffi::CStr) {
    // SAFETY: `name` is NUL-terminated, and both callers name controls that take no
    // input and no output, so every pointer is null and the length 0.
    let status = unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    };
    if status != 0 {
        tracing::debug!(status, control = ?name, "jemalloc control failed");
    }
}

/// Other platforms keep their system allocator, which returns memory on its own terms.
#[cfg(target_env = "msvc")]
pub fn release_free_memory() {}

#[cfg(target_env = "msvc")]
pub fn flush_thread_cache() {}
