//! Returning freed heap memory to the operating system.

/// Hands the allocator's free pages back to the OS (glibc keeps freed memory mapped).
/// After a bulk load most of what decoding allocated is free again; without this the
/// process's RSS stays at its peak instead of what the cache holds. Takes milliseconds
/// on a large heap: call it on a blocking thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn release_free_memory() {
    // SAFETY: malloc_trim only releases free memory back to the OS; it is thread-safe
    // and touches no memory the program still uses.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators and platforms return memory on their own terms.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release_free_memory() {}
