//! The `agentd` binary. Everything it does is in the library
//! ([`agentd::cli`]), so that the code it runs is compiled once there; here
//! only the allocator, which a library must not choose for its users.

use std::process::ExitCode;

/// mimalloc instead of the system allocator: the server allocates and frees
/// many small buffers per chunk and per request on several threads, where
/// glibc's malloc spent a fifth of the server's instructions (see
/// BENCHMARKS.md) and kept per-thread arenas' memory.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (mimalloc.h; the
/// sys crate names no constant for it): how long freed memory stays
/// committed before it goes back to the operating system.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory goes back to the operating system at once instead of after
/// mimalloc's purge delay (10 ms by default, ten times that for its
/// arenas), so that the server's resident memory follows what it
/// holds (BENCHMARKS.md: `capacity`); it costs no measurable throughput.
#[allow(unsafe_code)]
fn purge_freed_memory_at_once() {
    // SAFETY: setting an option is allowed at any time; mimalloc reads it
    // on its next purge.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

fn main() -> ExitCode {
    purge_freed_memory_at_once();
    agentd::cli::main()
}
